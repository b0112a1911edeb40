// Code generated from abi/abi.go by abi/internal/abigen (go generate ./abi); DO NOT EDIT.

//! The numbers and names of the voxhost plugin ABI v1 (normative text:
//! `abi/ABI.md`), under the names of `abi/abi.go` in upper snake case.

/// Version is the ABI version this host implements.
pub const ABI_VERSION: i32 = 1;

/// VersionMarkerPrefix starts the name of the export that declares a plugin's
/// ABI version: a plugin built for ABI v1 exports a function named
/// "voxhost_abi_v1". The host reads the number after the prefix.
pub const VERSION_MARKER_PREFIX: &str = "voxhost_abi_v";

/// VersionMarker is the export that marks a plugin as built for this ABI.
pub const VERSION_MARKER: &str = "voxhost_abi_v1";

// Names of the plugin's exports.
/// ExportMemory is the plugin's linear memory, where the frame buffer lives.
pub const EXPORT_MEMORY: &str = "memory";
/// ExportBuffer is vox_buffer(capacity_bytes i32) -> ptr i32: the address of a
/// buffer of at least capacity_bytes, owned by the plugin, 2-byte aligned.
pub const EXPORT_BUFFER: &str = "vox_buffer";
/// ExportProcess is vox_process(samples i32) -> i32: processes that many
/// PCM16LE samples in place and returns the number of output samples.
pub const EXPORT_PROCESS: &str = "vox_process";
/// ExportInit is the optional vox_init(config_len i32) -> i32, called once
/// with the JSON config already written at the start of the buffer.
pub const EXPORT_INIT: &str = "vox_init";
/// ExportEvent is the optional vox_event(kind i32, arg i32) -> i32.
pub const EXPORT_EVENT: &str = "vox_event";
/// ExportRate is the optional vox_rate(input_rate i32) -> output_rate i32,
/// through which a plugin declares a sample-rate change.
pub const EXPORT_RATE: &str = "vox_rate";
/// ExportReference is the optional vox_reference(capacity_bytes i32) ->
/// ptr i32 of an inbound plugin that asks for the far-end reference (what
/// the caller was sent, time-aligned with the caller's frame; ABI.md §11):
/// a second buffer, which the host fills before every vox_process.
pub const EXPORT_REFERENCE: &str = "vox_reference";

/// HostModule is the import module name of the functions the host provides.
pub const HOST_MODULE: &str = "voxhost";

// Names of the host's functions a plugin may import from HostModule.
/// ImportLog is log(level i32, ptr i32, len i32): a UTF-8 message for the host log.
pub const IMPORT_LOG: &str = "log";
/// ImportEmit is emit(name_ptr i32, name_len i32, data_ptr i32, data_len i32):
/// an event for the call's client (name: an identifier, data: JSON or empty).
pub const IMPORT_EMIT: &str = "emit";

// Status codes a plugin returns from vox_init, vox_process and vox_event.
// Zero and positive values are success; a negative value is one of these.
/// StatusOK means success.
pub const STATUS_OK: i32 = 0;
/// StatusError is an unspecified failure.
pub const STATUS_ERROR: i32 = -1;
/// StatusBadConfig means vox_init rejected the configuration.
pub const STATUS_BAD_CONFIG: i32 = -2;
/// StatusBadRate means the plugin does not accept that sample rate.
pub const STATUS_BAD_RATE: i32 = -3;
/// StatusBadLength means the plugin does not accept a frame of that length.
pub const STATUS_BAD_LENGTH: i32 = -4;
/// StatusBadState means the call came out of order (e.g. process before init).
pub const STATUS_BAD_STATE: i32 = -5;

// Event kinds the host delivers through vox_event(kind, arg).
/// EventCallStart: a call began; arg is the length of the call metadata JSON
/// the host wrote at the start of the buffer.
pub const EVENT_CALL_START: i32 = 1;
/// EventCallEnd: the call ended; arg is 0. No further calls follow.
pub const EVENT_CALL_END: i32 = 2;
/// EventDTMF: the caller pressed a key; arg is its ASCII code (0-9 * # A-D).
pub const EVENT_DTMF: i32 = 3;
/// EventClear: barge-in; drop any audio the plugin holds. arg is 0.
pub const EVENT_CLEAR: i32 = 4;
/// EventFlush: the input ended; the plugin may write held samples into its
/// buffer and return their count, which flows downstream as a last frame.
pub const EVENT_FLUSH: i32 = 5;

// Log levels of the log import.
pub const LOG_DEBUG: i32 = 0;
pub const LOG_INFO: i32 = 1;
pub const LOG_WARN: i32 = 2;
pub const LOG_ERROR: i32 = 3;

// Well-known names of events a plugin emits. Plugins may emit others.
/// EmitClear asks the host to clear the audio queued at the far end
/// (a Twilio "clear"), e.g. when the caller starts speaking over a bot.
pub const EMIT_CLEAR: &str = "clear";
/// EmitSpeechStart and EmitSpeechEnd mark voice activity.
pub const EMIT_SPEECH_START: &str = "speech_start";
pub const EMIT_SPEECH_END: &str = "speech_end";
/// EmitDTMF reports a detected key; data is the digit as a JSON string.
pub const EMIT_DTMF: &str = "dtmf";

// Limits the host enforces on what a plugin emits or logs.
/// MaxEmitNameLen is the longest event name, in bytes.
pub const MAX_EMIT_NAME_LEN: usize = 64;
/// MaxEmitDataLen is the longest event payload, in bytes.
pub const MAX_EMIT_DATA_LEN: usize = 4096;
/// MaxLogLen is the longest log message kept; longer ones are cut.
pub const MAX_LOG_LEN: usize = 4096;

/// SampleBytes is the size of one PCM16LE sample.
pub const SAMPLE_BYTES: usize = 2;

/// BufferAlign is the alignment the host requires of the frame buffer address.
pub const BUFFER_ALIGN: usize = 2;

/// TelephonyRate is the sample rate of G.711 audio at the edges of a call.
pub const TELEPHONY_RATE: u32 = 8000;
