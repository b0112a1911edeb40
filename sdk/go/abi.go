// Code generated from abi/abi.go by abi/internal/abigen (go generate ./abi); DO NOT EDIT.

package voxhost

// The constants of package abi (abi/ABI.md) by the same names and values.
// They are untyped, so a status can be returned from Process (an int) as
// well as compared with an Event's Kind (an int32).

// Version is the ABI version this host implements.
const Version = 1

// VersionMarkerPrefix starts the name of the export that declares a plugin's
// ABI version: a plugin built for ABI v1 exports a function named
// "voxhost_abi_v1". The host reads the number after the prefix.
const VersionMarkerPrefix = "voxhost_abi_v"

// VersionMarker is the export that marks a plugin as built for this ABI.
const VersionMarker = "voxhost_abi_v1"

// Names of the plugin's exports.
const (
	// ExportMemory is the plugin's linear memory, where the frame buffer lives.
	ExportMemory = "memory"
	// ExportBuffer is vox_buffer(capacity_bytes i32) -> ptr i32: the address of a
	// buffer of at least capacity_bytes, owned by the plugin, 2-byte aligned.
	ExportBuffer = "vox_buffer"
	// ExportProcess is vox_process(samples i32) -> i32: processes that many
	// PCM16LE samples in place and returns the number of output samples.
	ExportProcess = "vox_process"
	// ExportInit is the optional vox_init(config_len i32) -> i32, called once
	// with the JSON config already written at the start of the buffer.
	ExportInit = "vox_init"
	// ExportEvent is the optional vox_event(kind i32, arg i32) -> i32.
	ExportEvent = "vox_event"
	// ExportRate is the optional vox_rate(input_rate i32) -> output_rate i32,
	// through which a plugin declares a sample-rate change.
	ExportRate = "vox_rate"
	// ExportReference is the optional vox_reference(capacity_bytes i32) ->
	// ptr i32 of an inbound plugin that asks for the far-end reference (what
	// the caller was sent, time-aligned with the caller's frame; ABI.md §11):
	// a second buffer, which the host fills before every vox_process.
	ExportReference = "vox_reference"
)

// HostModule is the import module name of the functions the host provides.
const HostModule = "voxhost"

// Names of the host's functions a plugin may import from HostModule.
const (
	// ImportLog is log(level i32, ptr i32, len i32): a UTF-8 message for the host log.
	ImportLog = "log"
	// ImportEmit is emit(name_ptr i32, name_len i32, data_ptr i32, data_len i32):
	// an event for the call's client (name: an identifier, data: JSON or empty).
	ImportEmit = "emit"
)

// Status codes a plugin returns from vox_init, vox_process and vox_event.
// Zero and positive values are success; a negative value is one of these.
const (
	// StatusOK means success.
	StatusOK = 0
	// StatusError is an unspecified failure.
	StatusError = -1
	// StatusBadConfig means vox_init rejected the configuration.
	StatusBadConfig = -2
	// StatusBadRate means the plugin does not accept that sample rate.
	StatusBadRate = -3
	// StatusBadLength means the plugin does not accept a frame of that length.
	StatusBadLength = -4
	// StatusBadState means the call came out of order (e.g. process before init).
	StatusBadState = -5
)

// Event kinds the host delivers through vox_event(kind, arg).
const (
	// EventCallStart: a call began; arg is the length of the call metadata JSON
	// the host wrote at the start of the buffer.
	EventCallStart = 1
	// EventCallEnd: the call ended; arg is 0. No further calls follow.
	EventCallEnd = 2
	// EventDTMF: the caller pressed a key; arg is its ASCII code (0-9 * # A-D).
	EventDTMF = 3
	// EventClear: barge-in; drop any audio the plugin holds. arg is 0.
	EventClear = 4
	// EventFlush: the input ended; the plugin may write held samples into its
	// buffer and return their count, which flows downstream as a last frame.
	EventFlush = 5
)

// Log levels of the log import.
const (
	LogDebug = 0
	LogInfo  = 1
	LogWarn  = 2
	LogError = 3
)

// Well-known names of events a plugin emits. Plugins may emit others.
const (
	// EmitClear asks the host to clear the audio queued at the far end
	// (a Twilio "clear"), e.g. when the caller starts speaking over a bot.
	EmitClear = "clear"
	// EmitSpeechStart and EmitSpeechEnd mark voice activity.
	EmitSpeechStart = "speech_start"
	EmitSpeechEnd   = "speech_end"
	// EmitDTMF reports a detected key; data is the digit as a JSON string.
	EmitDTMF = "dtmf"
)

// Limits the host enforces on what a plugin emits or logs.
const (
	// MaxEmitNameLen is the longest event name, in bytes.
	MaxEmitNameLen = 64
	// MaxEmitDataLen is the longest event payload, in bytes.
	MaxEmitDataLen = 4096
	// MaxLogLen is the longest log message kept; longer ones are cut.
	MaxLogLen = 4096
)

// SampleBytes is the size of one PCM16LE sample.
const SampleBytes = 2

// BufferAlign is the alignment the host requires of the frame buffer address.
const BufferAlign = 2

// TelephonyRate is the sample rate of G.711 audio at the edges of a call.
const TelephonyRate = 8000
