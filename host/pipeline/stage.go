package pipeline

import "context"

// Stage is one processor of a chain: a plugin instance or a native Go
// processor. Its methods are called from one goroutine only.
type Stage interface {
	// Name labels the stage in errors, logs and metrics.
	Name() string
	// Buffer is the stage's frame buffer at full capacity; the stage reads
	// its input from the start and leaves its output there. It is valid
	// until the next call into the stage.
	Buffer() []byte
	// Process transforms the first samples of Buffer in place and returns
	// the number of output samples.
	Process(samples int) (int, error)
	// Event delivers an ABI event; payload, when not nil, is written into
	// the buffer and its length passed as arg. A flush may return samples.
	Event(kind, arg int32, payload []byte) (int, error)
	// InputRate and OutputRate are the stage's sample rates, in Hz.
	InputRate() int
	OutputRate() int
	// Close releases the stage.
	Close(ctx context.Context) error
}

// Filler writes a frame of PCM16LE samples into dst and returns the number
// of bytes written. The pipeline calls it to fill the first stage's buffer
// and again if that stage fails and must be bypassed for the frame.
type Filler interface {
	Fill(dst []byte) int
}

// PCM is a Filler over a frame already in PCM16LE. Pass a pointer: a
// pointer in an interface costs no allocation, a slice would.
type PCM struct {
	Frame []byte
}

// Fill copies the frame into dst.
func (p *PCM) Fill(dst []byte) int { return copy(dst, p.Frame) }

// NativeFunc processes samples PCM16LE samples at the start of buf in place
// and returns the number of output samples.
type NativeFunc func(buf []byte, samples int) int

// Native is a processor written in Go, compiled into the host: the baseline
// a WebAssembly hop is measured against.
type Native struct {
	name string
	rate int
	buf  []byte
	fn   NativeFunc
}

// NewNative makes a native stage with a buffer of capacity bytes.
func NewNative(name string, rate, capacity int, fn NativeFunc) *Native {
	return &Native{name: name, rate: rate, buf: make([]byte, capacity), fn: fn}
}

// Passthrough is the NativeFunc that leaves every frame as it is.
func Passthrough(_ []byte, samples int) int { return samples }

// Name labels the stage.
func (n *Native) Name() string { return n.name }

// Buffer is the stage's frame buffer.
func (n *Native) Buffer() []byte { return n.buf }

// Process runs the function.
func (n *Native) Process(samples int) (int, error) { return n.fn(n.buf, samples), nil }

// Event is ignored by native stages.
func (n *Native) Event(int32, int32, []byte) (int, error) { return 0, nil }

// InputRate is the stage's rate.
func (n *Native) InputRate() int { return n.rate }

// OutputRate is the stage's rate: native stages do not resample.
func (n *Native) OutputRate() int { return n.rate }

// Close does nothing.
func (n *Native) Close(context.Context) error { return nil }
