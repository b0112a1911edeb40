// Code generated from abi/abi.go by abi/internal/abigen (go generate ./abi); DO NOT EDIT.

// The names and numbers of the voxhost plugin ABI v1 (abi/ABI.md), under the
// names of abi/abi.go. The strings are @lazy: asc puts one in the module's
// data only if the plugin uses it.

/** Version is the ABI version this host implements. */
export const Version: i32 = 1;

/** VersionMarkerPrefix starts the name of the export that declares a plugin's ABI version: a plugin built for ABI v1 exports a function named "voxhost_abi_v1". The host reads the number after the prefix. */
// @ts-ignore: decorator
@lazy
export const VersionMarkerPrefix: string = "voxhost_abi_v";

/** VersionMarker is the export that marks a plugin as built for this ABI. */
// @ts-ignore: decorator
@lazy
export const VersionMarker: string = "voxhost_abi_v1";

// Names of the plugin's exports.
/** ExportMemory is the plugin's linear memory, where the frame buffer lives. */
// @ts-ignore: decorator
@lazy
export const ExportMemory: string = "memory";
/** ExportBuffer is vox_buffer(capacity_bytes i32) -> ptr i32: the address of a buffer of at least capacity_bytes, owned by the plugin, 2-byte aligned. */
// @ts-ignore: decorator
@lazy
export const ExportBuffer: string = "vox_buffer";
/** ExportProcess is vox_process(samples i32) -> i32: processes that many PCM16LE samples in place and returns the number of output samples. */
// @ts-ignore: decorator
@lazy
export const ExportProcess: string = "vox_process";
/** ExportInit is the optional vox_init(config_len i32) -> i32, called once with the JSON config already written at the start of the buffer. */
// @ts-ignore: decorator
@lazy
export const ExportInit: string = "vox_init";
/** ExportEvent is the optional vox_event(kind i32, arg i32) -> i32. */
// @ts-ignore: decorator
@lazy
export const ExportEvent: string = "vox_event";
/** ExportRate is the optional vox_rate(input_rate i32) -> output_rate i32, through which a plugin declares a sample-rate change. */
// @ts-ignore: decorator
@lazy
export const ExportRate: string = "vox_rate";
/** ExportReference is the optional vox_reference(capacity_bytes i32) -> ptr i32 of an inbound plugin that asks for the far-end reference (what the caller was sent, time-aligned with the caller's frame; ABI.md §11): a second buffer, which the host fills before every vox_process. */
// @ts-ignore: decorator
@lazy
export const ExportReference: string = "vox_reference";

/** HostModule is the import module name of the functions the host provides. */
// @ts-ignore: decorator
@lazy
export const HostModule: string = "voxhost";

// Names of the host's functions a plugin may import from HostModule.
/** ImportLog is log(level i32, ptr i32, len i32): a UTF-8 message for the host log. */
// @ts-ignore: decorator
@lazy
export const ImportLog: string = "log";
/** ImportEmit is emit(name_ptr i32, name_len i32, data_ptr i32, data_len i32): an event for the call's client (name: an identifier, data: JSON or empty). */
// @ts-ignore: decorator
@lazy
export const ImportEmit: string = "emit";

// Status codes a plugin returns from vox_init, vox_process and vox_event.
// Zero and positive values are success; a negative value is one of these.
/** StatusOK means success. */
export const StatusOK: i32 = 0;
/** StatusError is an unspecified failure. */
export const StatusError: i32 = -1;
/** StatusBadConfig means vox_init rejected the configuration. */
export const StatusBadConfig: i32 = -2;
/** StatusBadRate means the plugin does not accept that sample rate. */
export const StatusBadRate: i32 = -3;
/** StatusBadLength means the plugin does not accept a frame of that length. */
export const StatusBadLength: i32 = -4;
/** StatusBadState means the call came out of order (e.g. process before init). */
export const StatusBadState: i32 = -5;

// Event kinds the host delivers through vox_event(kind, arg).
/** EventCallStart: a call began; arg is the length of the call metadata JSON the host wrote at the start of the buffer. */
export const EventCallStart: i32 = 1;
/** EventCallEnd: the call ended; arg is 0. No further calls follow. */
export const EventCallEnd: i32 = 2;
/** EventDTMF: the caller pressed a key; arg is its ASCII code (0-9 * # A-D). */
export const EventDTMF: i32 = 3;
/** EventClear: barge-in; drop any audio the plugin holds. arg is 0. */
export const EventClear: i32 = 4;
/** EventFlush: the input ended; the plugin may write held samples into its buffer and return their count, which flows downstream as a last frame. */
export const EventFlush: i32 = 5;

// Log levels of the log import.
export const LogDebug: i32 = 0;
export const LogInfo: i32 = 1;
export const LogWarn: i32 = 2;
export const LogError: i32 = 3;

// Well-known names of events a plugin emits. Plugins may emit others.
/** EmitClear asks the host to clear the audio queued at the far end (a Twilio "clear"), e.g. when the caller starts speaking over a bot. */
// @ts-ignore: decorator
@lazy
export const EmitClear: string = "clear";
/** EmitSpeechStart and EmitSpeechEnd mark voice activity. */
// @ts-ignore: decorator
@lazy
export const EmitSpeechStart: string = "speech_start";
// @ts-ignore: decorator
@lazy
export const EmitSpeechEnd: string = "speech_end";
/** EmitDTMF reports a detected key; data is the digit as a JSON string. */
// @ts-ignore: decorator
@lazy
export const EmitDTMF: string = "dtmf";

// Limits the host enforces on what a plugin emits or logs.
/** MaxEmitNameLen is the longest event name, in bytes. */
export const MaxEmitNameLen: i32 = 64;
/** MaxEmitDataLen is the longest event payload, in bytes. */
export const MaxEmitDataLen: i32 = 4096;
/** MaxLogLen is the longest log message kept; longer ones are cut. */
export const MaxLogLen: i32 = 4096;

/** SampleBytes is the size of one PCM16LE sample. */
export const SampleBytes: i32 = 2;

/** BufferAlign is the alignment the host requires of the frame buffer address. */
export const BufferAlign: i32 = 2;

/** TelephonyRate is the sample rate of G.711 audio at the edges of a call. */
export const TelephonyRate: i32 = 8000;
