package plugin_test

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/plugins"
)

// TestCallStackShrinks: the kept vox_process handle starts with the small
// machine stack, not wazero's 10 KiB one. It fails when a wazero upgrade
// moves the call engine's stack fields, which shrinkStack then leaves alone.
func TestCallStackShrinks(t *testing.T) {
	in, err := load(t, newRuntime(t), "deep_call").Instantiate(context.Background(), plugin.InstanceConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	if got := plugin.ProcessStackBytes(in); got != plugin.KeptStackBytes {
		t.Fatalf("vox_process's machine stack is %d bytes, want %d: wazero's call engine no longer has the fields shrinkStack rewrites", got, plugin.KeptStackBytes)
	}
	// 4,000 nested calls need far more than the kept stack: it grows, and
	// every frame on it survives the move (the guest checks its result).
	for frame := 0; frame < 3; frame++ {
		if n, err := in.Process(160); err != nil || n != 160 {
			t.Fatalf("frame %d: Process = %d, %v", frame, n, err)
		}
	}
	if got := plugin.ProcessStackBytes(in); got <= plugin.KeptStackBytes {
		t.Fatalf("after a 4,000-deep recursion the stack is still %d bytes", got)
	}
}

// TestCallStackStaysSmall: no stock plugin outgrows the kept stack on
// telephony audio at every rate a call can have, so the bytes a call keeps
// per plugin are the kept stack's, not a grown one's.
func TestCallStackStaysSmall(t *testing.T) {
	rt := newRuntime(t)
	configs := map[string]string{"resample": `{"to":48000}`}
	for _, name := range plugins.Names() {
		wasm, _ := plugins.Get(name)
		p, err := rt.Load(context.Background(), name, wasm)
		if err != nil {
			t.Fatal(err)
		}
		for _, rate := range []int{8000, 16000, 24000} {
			config := configs[name]
			in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Config: []byte(config), InputRate: rate, Logger: quiet})
			if err != nil {
				t.Fatalf("%s at %d Hz: %v", name, rate, err)
			}
			rng := rand.New(rand.NewPCG(1, uint64(rate)))
			for frame := 0; frame < 250; frame++ {
				samples := rate / 50
				if frame%7 == 6 {
					samples = rate / 10 // the longest frame, now and then
				}
				speechLike(in.Buffer()[:2*samples], rate, frame, rng)
				if _, err := in.Process(samples); err != nil {
					t.Fatalf("%s at %d Hz, frame %d: %v", name, rate, frame, err)
				}
			}
			if got := plugin.ProcessStackBytes(in); got != plugin.KeptStackBytes {
				t.Errorf("%s at %d Hz: vox_process's machine stack grew to %d bytes (kept: %d)", name, rate, got, plugin.KeptStackBytes)
			}
			in.Close(context.Background())
		}
	}
}

// speechLike fills buf with a frame of one of four kinds, changing every
// 25 frames: silence, a loud two-tone (DTMF-like) signal, full-scale noise
// and a voiced-like harmonic series.
func speechLike(buf []byte, rate, frame int, rng *rand.Rand) {
	for i := 0; i < len(buf)/2; i++ {
		t := float64(frame*len(buf)/2+i) / float64(rate)
		var v float64
		switch frame / 25 % 4 {
		case 1:
			v = 12000 * (math.Sin(2*math.Pi*697*t) + math.Sin(2*math.Pi*1209*t))
		case 2:
			v = float64(rng.IntN(65536) - 32768)
		case 3:
			for h := 1; h <= 8; h++ {
				v += 3000 / float64(h) * math.Sin(2*math.Pi*float64(120*h)*t)
			}
		}
		binary.LittleEndian.PutUint16(buf[2*i:], uint16(int16(max(-32768, min(32767, v)))))
	}
}
