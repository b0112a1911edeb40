// Package voxhost is the Go SDK for voxhost plugins: WebAssembly modules that
// process 20 ms frames of call audio under the voxhost ABI v1 (abi/ABI.md).
//
// A plugin is a main package that registers a Plugin from init and is built
// as a WASI reactor:
//
//	package main
//
//	import voxhost "github.com/voxhost/voxhost/sdk/go"
//
//	type gain struct{}
//
//	func (gain) Process(s []int16) int {
//		for i := range s {
//			s[i] /= 2
//		}
//		return len(s)
//	}
//
//	func init() { voxhost.Register(gain{}) }
//
//	func main() {} // required by -buildmode=c-shared, never called
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o plugin.wasm .
//
// This package exports every function of the ABI itself (voxhost_abi_v1,
// vox_buffer, vox_init, vox_rate, vox_event, vox_process) with
// //go:wasmexport, which works from any package: the plugin's own package
// must not export them again. It owns the frame buffer, parses the JSON
// configuration into a Config, and calls the registered Plugin and the
// optional interfaces it implements (Initer, Rater, EventHandler).
//
// Rules a Go plugin must keep, because the host calls it once per frame on the
// audio path: do not allocate in Process (the garbage collector then never
// runs there); do not block (a goroutine parked in an export deadlocks the
// module); keep no state in the samples slice between calls.
package voxhost

import "unsafe"

// Plugin processes audio. Process gets the frame's samples, in place, and
// returns how many output samples it left at the start of the buffer: len(s)
// for a filter, 0 to swallow the frame, more for a resampler (up to cap(s),
// the whole buffer), or a negative status such as StatusBadLength. s is only
// valid during the call.
type Plugin interface {
	Process(s []int16) int
}

// Initer is implemented by a plugin that reads a configuration. Init is
// called once per call, before any audio, with the JSON object the pipeline
// gives the plugin ({} when none). A non-nil error rejects it: the SDK logs
// the error's text at LogError and the call does not start. A plugin that
// does not implement Initer rejects every configuration other than {}.
type Initer interface {
	Init(cfg Config) error
}

// Rater is implemented by a plugin that checks or changes the sample rate.
// Rate gets the input rate in Hz (8000 for the first stage) and returns the
// output rate; an error (logged at LogError) refuses the input rate. Without
// Rater every input rate is accepted and passed through unchanged.
type Rater interface {
	Rate(in uint32) (uint32, error)
}

// EventHandler is implemented by a plugin that reacts to call events. Event
// returns 0 (StatusOK), a count of tail samples for EventFlush, or a negative
// status. Kinds a plugin does not know must be answered with 0. Without
// EventHandler every event succeeds and a flush yields nothing.
type EventHandler interface {
	Event(ev Event) int
}

// Event is one call event delivered to EventHandler.Event.
type Event struct {
	// Kind is EventCallStart, EventCallEnd, EventDTMF, EventClear,
	// EventFlush, or a kind added to ABI v1 later.
	Kind int32
	// Arg is the kind's argument: the key's ASCII code for EventDTMF, the
	// length of the metadata for EventCallStart, otherwise 0.
	Arg int32
}

// Key is the key pressed, for EventDTMF: '0'-'9', '*', '#' or 'A'-'D'.
func (ev Event) Key() byte { return byte(ev.Arg) }

// Data is the call metadata JSON object, for EventCallStart (see
// ParseConfig to read it); nil for other kinds. It lies in the frame buffer:
// valid only during the call, so copy what you keep.
func (ev Event) Data() []byte {
	if ev.Kind != EventCallStart || ev.Arg <= 0 {
		return nil
	}
	return frameBytes()[:min(int(ev.Arg), capacity*SampleBytes)]
}

// Buffer is the whole frame buffer, for EventFlush: write held samples at
// its start and return their count. Valid only during the call.
func (ev Event) Buffer() []int16 { return frame()[:capacity] }

var registered Plugin

// Register makes p the plugin. Call it exactly once, from an init function
// of the main package: the host runs init (through _initialize) before any
// other call. It panics if called twice or with nil, which makes the
// module fail to load with the message in the host's log.
func Register(p Plugin) {
	if p == nil {
		panic("voxhost: Register(nil)")
	}
	if registered != nil {
		panic("voxhost: Register called twice")
	}
	registered = p
}

// Log writes msg to the host log at a level (LogDebug, LogInfo, LogWarn,
// LogError), attributed to the plugin and the call. The host cuts messages
// longer than MaxLogLen bytes. Writing to os.Stdout and os.Stderr works too
// (the host logs each line at info and warn) but costs a WASI call per write.
func Log(level int32, msg string) {
	hostLog(level, unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}

// Emit sends an event to the call's client: name is 1 to MaxEmitNameLen
// bytes of [a-z0-9_.-], data is empty or one JSON value of at most
// MaxEmitDataLen bytes (see AppendJSONString). The host copies both before
// Emit returns, so data may be a reused buffer; a malformed event is dropped
// by the host.
func Emit(name string, data []byte) {
	hostEmit(unsafe.Pointer(unsafe.StringData(name)), int32(len(name)),
		unsafe.Pointer(unsafe.SliceData(data)), int32(len(data)))
}

// EmitString is Emit with the data in a string.
func EmitString(name, data string) {
	hostEmit(unsafe.Pointer(unsafe.StringData(name)), int32(len(name)),
		unsafe.Pointer(unsafe.StringData(data)), int32(len(data)))
}
