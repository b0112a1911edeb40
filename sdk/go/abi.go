package voxhost

// The constants of abi/abi.go in the host module, by the same names and
// values; abi/sdk_go_test.go fails when the two disagree. They are untyped,
// so a status can be returned from Process (an int) as well as compared with
// an Event's Kind (an int32).

// Version is the ABI version this SDK implements.
const Version = 1

// VersionMarkerPrefix starts the name of the export that declares a plugin's
// ABI version.
const VersionMarkerPrefix = "voxhost_abi_v"

// VersionMarker is the export that marks a plugin as built for ABI v1; the
// SDK exports it.
const VersionMarker = "voxhost_abi_v1"

// Names of the plugin's exports, all provided by the SDK.
const (
	// ExportMemory is the plugin's linear memory (Go's linker exports it).
	ExportMemory = "memory"
	// ExportBuffer is vox_buffer(capacity_bytes) -> ptr.
	ExportBuffer = "vox_buffer"
	// ExportProcess is vox_process(samples) -> samples_or_status.
	ExportProcess = "vox_process"
	// ExportInit is vox_init(config_len) -> status.
	ExportInit = "vox_init"
	// ExportEvent is vox_event(kind, arg) -> count_or_status.
	ExportEvent = "vox_event"
	// ExportRate is vox_rate(input_rate) -> output_rate_or_status.
	ExportRate = "vox_rate"
)

// HostModule is the import module of the host's functions.
const HostModule = "voxhost"

// Names of the host's functions, imported by the SDK.
const (
	// ImportLog is log(level, ptr, len); see Log.
	ImportLog = "log"
	// ImportEmit is emit(name_ptr, name_len, data_ptr, data_len); see Emit.
	ImportEmit = "emit"
)

// Status codes: negative results of Process and Event (and, through the
// SDK, of a failed Init or Rate). Zero and positive values are success.
const (
	// StatusOK means success.
	StatusOK = 0
	// StatusError is an unspecified failure.
	StatusError = -1
	// StatusBadConfig means the configuration is rejected (Init failed).
	StatusBadConfig = -2
	// StatusBadRate means the input rate is not accepted (Rate failed).
	StatusBadRate = -3
	// StatusBadLength means the frame length is not accepted.
	StatusBadLength = -4
	// StatusBadState means the call came out of order.
	StatusBadState = -5
)

// Event kinds, the Kind of an Event.
const (
	// EventCallStart: a call began; Event.Data is the call metadata JSON.
	EventCallStart = 1
	// EventCallEnd: the call ended; no further calls follow.
	EventCallEnd = 2
	// EventDTMF: the caller pressed a key; Event.Key is its character.
	EventDTMF = 3
	// EventClear: barge-in; drop any audio the plugin holds.
	EventClear = 4
	// EventFlush: the input ended; write held samples into Event.Buffer and
	// return their count.
	EventFlush = 5
)

// Log levels of Log.
const (
	LogDebug = 0
	LogInfo  = 1
	LogWarn  = 2
	LogError = 3
)

// Well-known names of events a plugin emits. Plugins may emit others.
const (
	// EmitClear asks the host to clear the audio queued at the far end.
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

// BufferAlign is the alignment the host requires of the frame buffer.
const BufferAlign = 2

// TelephonyRate is the sample rate of G.711 audio at the edges of a call.
const TelephonyRate = 8000
