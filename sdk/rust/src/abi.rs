//! The numbers and names of the voxhost plugin ABI v1, mirrored from
//! `abi/abi.go` (normative text: `abi/ABI.md`). A test on the Go side
//! (`abi/sdk_rust_test.go`) checks that every constant here agrees with it.

/// The ABI version this SDK implements.
pub const ABI_VERSION: i32 = 1;
/// Prefix of the export whose name declares a plugin's ABI version.
pub const VERSION_MARKER_PREFIX: &str = "voxhost_abi_v";
/// The export that marks a plugin as built for ABI v1 (the `plugin!` macro defines it).
pub const VERSION_MARKER: &str = "voxhost_abi_v1";

/// The plugin's linear memory.
pub const EXPORT_MEMORY: &str = "memory";
/// `vox_buffer(capacity_bytes) -> ptr`.
pub const EXPORT_BUFFER: &str = "vox_buffer";
/// `vox_process(samples) -> samples_or_status`.
pub const EXPORT_PROCESS: &str = "vox_process";
/// `vox_init(config_len) -> status`.
pub const EXPORT_INIT: &str = "vox_init";
/// `vox_event(kind, arg) -> count_or_status`.
pub const EXPORT_EVENT: &str = "vox_event";
/// `vox_rate(input_rate) -> output_rate_or_status`.
pub const EXPORT_RATE: &str = "vox_rate";

/// Import module of the host's functions.
pub const HOST_MODULE: &str = "voxhost";
/// `voxhost.log(level, ptr, len)`.
pub const IMPORT_LOG: &str = "log";
/// `voxhost.emit(name_ptr, name_len, data_ptr, data_len)`.
pub const IMPORT_EMIT: &str = "emit";

/// Success.
pub const STATUS_OK: i32 = 0;
/// Unspecified failure.
pub const STATUS_ERROR: i32 = -1;
/// `vox_init` rejected the configuration.
pub const STATUS_BAD_CONFIG: i32 = -2;
/// The input sample rate is not accepted.
pub const STATUS_BAD_RATE: i32 = -3;
/// A frame of that length is not accepted.
pub const STATUS_BAD_LENGTH: i32 = -4;
/// The call came out of order.
pub const STATUS_BAD_STATE: i32 = -5;

/// A call began; arg is the length of the call metadata JSON in the buffer.
pub const EVENT_CALL_START: i32 = 1;
/// The call ended; no further calls follow.
pub const EVENT_CALL_END: i32 = 2;
/// A key was pressed; arg is its ASCII code (`0`-`9`, `*`, `#`, `A`-`D`).
pub const EVENT_DTMF: i32 = 3;
/// Barge-in: drop any audio the plugin holds.
pub const EVENT_CLEAR: i32 = 4;
/// The input ended: the plugin may write held samples and return their count.
pub const EVENT_FLUSH: i32 = 5;

/// Log levels of `voxhost.log`.
pub const LOG_DEBUG: i32 = 0;
pub const LOG_INFO: i32 = 1;
pub const LOG_WARN: i32 = 2;
pub const LOG_ERROR: i32 = 3;

/// Well-known event names a plugin emits.
pub const EMIT_CLEAR: &str = "clear";
pub const EMIT_SPEECH_START: &str = "speech_start";
pub const EMIT_SPEECH_END: &str = "speech_end";
pub const EMIT_DTMF: &str = "dtmf";

/// Longest event name, in bytes.
pub const MAX_EMIT_NAME_LEN: usize = 64;
/// Longest event payload, in bytes.
pub const MAX_EMIT_DATA_LEN: usize = 4096;
/// Longest log message kept, in bytes; longer ones are cut by the host.
pub const MAX_LOG_LEN: usize = 4096;

/// Size of one PCM16LE sample, in bytes.
pub const SAMPLE_BYTES: usize = 2;
/// Alignment the host requires of the frame buffer address.
pub const BUFFER_ALIGN: usize = 2;
/// Sample rate of G.711 audio at the edges of a call, in Hz.
pub const TELEPHONY_RATE: u32 = 8000;
