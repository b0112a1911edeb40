//go:build cgo

package nativeplugin

/*
#cgo CFLAGS: -O2 -I${SRCDIR}/../../sdk/c -Wno-attributes -Wno-pointer-to-int-cast
#cgo amd64 CFLAGS: -msse4.1
#cgo LDFLAGS: -lm
#include "native.h"

static int32_t vn_call1(int32_t (*f)(int32_t), int32_t a) { return f(a); }
static int32_t vn_call2(int32_t (*f)(int32_t, int32_t), int32_t a, int32_t b) { return f(a, b); }
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/voxhost/voxhost/abi"
)

// builds are the plugins compiled in, by stock name (dtmf_rust.go adds
// dtmf): none on an amd64 CPU without SSE4.1, which they are compiled for
// (as wazero's compiler, the other side of the comparison, uses it).
var builds = map[string]*C.vox_native_plugin{
	"agc":      &C.vox_native_agc,
	"gain":     &C.vox_native_gain,
	"gate":     &C.vox_native_gate,
	"resample": &C.vox_native_resample,
	"tone":     &C.vox_native_tone,
	"vad":      &C.vox_native_vad,
}

func init() {
	if runtime.GOARCH == "amd64" && !cpu.X86.HasSSE41 {
		builds = nil
	}
}

// open marks the builds that have a Stage: their state is C globals.
var open sync.Map

// Stage is a stock C plugin's own source compiled for the host, run as a
// pipeline stage: its buffer is the plugin's vox_frame_buffer, and each call
// is a cgo call straight into vox_process (no sandbox, no CPU budget).
type Stage struct {
	name            string
	p               *C.vox_native_plugin
	buf             []byte
	inRate, outRate int
	closed          bool
}

// Open initialises the native build of the stock plugin name with a JSON
// config ("{}" if empty) at an input rate, as the host does a WebAssembly
// instance: vox_init with the config in the buffer, then vox_rate. Only one
// Stage of a plugin can be open at a time.
func Open(name string, config []byte, inputRate int) (*Stage, error) {
	p, ok := builds[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoBuild, name)
	}
	if _, busy := open.LoadOrStore(name, true); busy {
		return nil, fmt.Errorf("nativeplugin: %s is already open (its state is the C globals, one per process)", name)
	}
	s := &Stage{name: name, p: p, inRate: inputRate, outRate: inputRate,
		buf: unsafe.Slice((*byte)(unsafe.Pointer(p.buffer)), int(p.capacity))}
	if len(config) == 0 {
		config = []byte("{}")
	}
	if len(config) > len(s.buf) {
		s.Close(context.Background())
		return nil, fmt.Errorf("nativeplugin: %s: a config of %d bytes does not fit its %d-byte buffer", name, len(config), len(s.buf))
	}
	if p.init != nil {
		copy(s.buf, config)
		if st := C.vn_call1(p.init, C.int32_t(len(config))); st < 0 {
			s.Close(context.Background())
			return nil, fmt.Errorf("nativeplugin: %s: vox_init returned %d", name, int32(st))
		}
	}
	if p.rate != nil {
		out := C.vn_call1(p.rate, C.int32_t(inputRate))
		if out <= 0 {
			s.Close(context.Background())
			return nil, fmt.Errorf("nativeplugin: %s: vox_rate returned %d for an input of %d Hz", name, int32(out), inputRate)
		}
		s.outRate = int(out)
	}
	return s, nil
}

// Name labels the stage: the plugin's name.
func (s *Stage) Name() string { return s.name }

// Buffer is the plugin's frame buffer.
func (s *Stage) Buffer() []byte { return s.buf }

// Process runs vox_process on the first samples of Buffer.
func (s *Stage) Process(samples int) (int, error) {
	out := int(C.vn_call1(s.p.process, C.int32_t(samples)))
	if out < 0 {
		return 0, fmt.Errorf("nativeplugin: %s: vox_process returned %d", s.name, out)
	}
	if out*abi.SampleBytes > len(s.buf) {
		return 0, fmt.Errorf("nativeplugin: %s: vox_process returned %d samples, more than its buffer holds", s.name, out)
	}
	return out, nil
}

// Event delivers an event to vox_event, if the plugin has one.
func (s *Stage) Event(kind, arg int32, payload []byte) (int, error) {
	if s.p.event == nil {
		return 0, nil
	}
	if payload != nil {
		if len(payload) > len(s.buf) {
			return 0, fmt.Errorf("nativeplugin: %s: an event payload of %d bytes does not fit its buffer", s.name, len(payload))
		}
		arg = int32(copy(s.buf, payload))
	}
	out := int(C.vn_call2(s.p.event, C.int32_t(kind), C.int32_t(arg)))
	if out < 0 {
		return 0, fmt.Errorf("nativeplugin: %s: vox_event returned %d", s.name, out)
	}
	return out, nil
}

// Emits counts the events the plugin has emitted since the process started.
func (s *Stage) Emits() int64 { return int64(*s.p.emits) }

// InputRate is the rate the stage was opened at.
func (s *Stage) InputRate() int { return s.inRate }

// OutputRate is what vox_rate answered (the input rate without one).
func (s *Stage) OutputRate() int { return s.outRate }

// Close lets the plugin be opened again; it may be called more than once.
func (s *Stage) Close(context.Context) error {
	if !s.closed {
		s.closed = true
		open.Delete(s.name)
	}
	return nil
}

// ErrNoBuild is wrapped by Open's error for a plugin with no native build.
var ErrNoBuild = errors.New("nativeplugin: no native build of that plugin")

// Available reports whether this build of voxhost has a native build of
// the stock plugin name.
func Available(name string) bool { _, ok := builds[name]; return ok }

// Rust reports whether the native build of name is a Rust static library
// (dtmf) rather than C compiled by cgo.
func Rust(name string) bool { return name == "dtmf" && Available(name) }
