// The names and numbers of the voxhost plugin ABI v1 (abi/ABI.md), mirrored
// from abi/abi.go under the same names. abi/sdk_assemblyscript_test.go checks
// that every constant here agrees with the Go package: keep one per line, in
// the form `export const Name: type = value;`. The strings are @lazy, on the
// line before: asc then puts one in the module's data only if the plugin
// uses it, rather than 640 bytes of names in front of the plugin's own data
// (only the OS pages a plugin touches cost the host memory).

/** The ABI version this SDK implements. */
export const Version: i32 = 1;
/** Prefix of the export that declares a plugin's ABI version. */
// @ts-ignore: decorator
@lazy
export const VersionMarkerPrefix: string = "voxhost_abi_v";
/** The export that marks a plugin as built for ABI v1 (see voxhost_abi_v1 in exports.ts). */
// @ts-ignore: decorator
@lazy
export const VersionMarker: string = "voxhost_abi_v1";

// Names of the plugin's exports.
// @ts-ignore: decorator
@lazy
export const ExportMemory: string = "memory";
// @ts-ignore: decorator
@lazy
export const ExportBuffer: string = "vox_buffer";
// @ts-ignore: decorator
@lazy
export const ExportProcess: string = "vox_process";
// @ts-ignore: decorator
@lazy
export const ExportInit: string = "vox_init";
// @ts-ignore: decorator
@lazy
export const ExportEvent: string = "vox_event";
// @ts-ignore: decorator
@lazy
export const ExportRate: string = "vox_rate";

// The host module and the functions a plugin may import from it.
// @ts-ignore: decorator
@lazy
export const HostModule: string = "voxhost";
// @ts-ignore: decorator
@lazy
export const ImportLog: string = "log";
// @ts-ignore: decorator
@lazy
export const ImportEmit: string = "emit";

// Status codes: results of vox_init, vox_rate, vox_process and vox_event.
// Zero and positive values are success; a negative value is one of these.
export const StatusOK: i32 = 0;
export const StatusError: i32 = -1;
export const StatusBadConfig: i32 = -2;
export const StatusBadRate: i32 = -3;
export const StatusBadLength: i32 = -4;
export const StatusBadState: i32 = -5;

// Event kinds the host delivers through vox_event(kind, arg).
export const EventCallStart: i32 = 1;
export const EventCallEnd: i32 = 2;
export const EventDTMF: i32 = 3;
export const EventClear: i32 = 4;
export const EventFlush: i32 = 5;

// Log levels of the log import.
export const LogDebug: i32 = 0;
export const LogInfo: i32 = 1;
export const LogWarn: i32 = 2;
export const LogError: i32 = 3;

// Well-known names of events a plugin emits. Plugins may emit others.
// @ts-ignore: decorator
@lazy
export const EmitClear: string = "clear";
// @ts-ignore: decorator
@lazy
export const EmitSpeechStart: string = "speech_start";
// @ts-ignore: decorator
@lazy
export const EmitSpeechEnd: string = "speech_end";
// @ts-ignore: decorator
@lazy
export const EmitDTMF: string = "dtmf";

// Limits the host enforces on what a plugin emits or logs, in bytes.
export const MaxEmitNameLen: i32 = 64;
export const MaxEmitDataLen: i32 = 4096;
export const MaxLogLen: i32 = 4096;

/** Size of one PCM16LE sample, in bytes. */
export const SampleBytes: i32 = 2;
/** Alignment the host requires of the frame buffer address, in bytes. */
export const BufferAlign: i32 = 2;
/** Sample rate of G.711 audio at the edges of a call, in Hz. */
export const TelephonyRate: i32 = 8000;
