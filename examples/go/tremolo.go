// Command tremolo is the example plugin of examples/TREMOLO.md written with
// the Go SDK: a low-frequency modulation of the gain, toggled by the # key.
// Every SDK language implements it bit for bit: integer arithmetic per
// sample, and the two configuration conversions in float64 in the order the
// spec gives.
//
// Build: GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o build/tremolo.wasm .
package main

import (
	"math"
	"strconv"

	voxhost "github.com/voxhost/voxhost/sdk/go"
)

type tremolo struct {
	rateHz   float64
	depthQ16 int32  // depth in Q16: 65536 dips the gain to silence
	inc      uint32 // phase increment per sample, 2^32 = one LFO cycle
	phase    uint32 // wraps modulo 2^32
	enabled  bool
	event    [64]byte // reused for the tremolo.key payload
}

func init() { voxhost.Register(&tremolo{enabled: true}) }

// main is required by -buildmode=c-shared and never called: the host calls
// the exports, and init has registered the plugin by then.
func main() {}

func (t *tremolo) Init(cfg voxhost.Config) error {
	rate, err := cfg.NumberIn("rate_hz", 4, 0.1, 20)
	if err != nil {
		return err
	}
	depth, err := cfg.NumberIn("depth", 0.5, 0, 1)
	if err != nil {
		return err
	}
	t.rateHz = rate
	// The float64 conversion forbids fusing the multiply and the add into
	// one FMA (Go may on some architectures), which would round differently
	// from the other languages.
	t.depthQ16 = int32(math.Floor(float64(depth*65536.0) + 0.5))
	return nil
}

func (t *tremolo) Rate(in uint32) (uint32, error) {
	if in < 8000 || in > 48000 {
		return 0, rateError(in)
	}
	t.inc = uint32(math.Floor(float64(t.rateHz*4294967296.0/float64(in)) + 0.5))
	return in, nil
}

type rateError uint32

func (r rateError) Error() string {
	return "tremolo: input rate " + strconv.Itoa(int(r)) + " Hz is not between 8000 and 48000"
}

func (t *tremolo) Process(s []int16) int {
	phase, inc, depth := t.phase, t.inc, int64(t.depthQ16)
	for i := range s {
		p := int64(phase >> 16)
		tri := 2 * p
		if p >= 32768 {
			tri = 2 * (65535 - p)
		}
		g := 65536 - (depth*tri)>>16 // Q16 gain, at most 65536
		if t.enabled {
			s[i] = int16((int64(s[i]) * g) >> 16) // >> on a signed value floors
		}
		phase += inc
	}
	t.phase = phase
	return len(s)
}

func (t *tremolo) Event(ev voxhost.Event) int {
	if ev.Kind != voxhost.EventDTMF {
		return voxhost.StatusOK
	}
	key := ev.Key()
	if key == '#' {
		t.enabled = !t.enabled
	}
	b := append(t.event[:0], `{"digit":`...)
	b = voxhost.AppendJSONString(b, string(rune(key)))
	b = append(b, `,"enabled":`...)
	b = strconv.AppendBool(b, t.enabled)
	b = append(b, '}')
	voxhost.Emit("tremolo.key", b)
	return voxhost.StatusOK
}
