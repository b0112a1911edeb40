package plugin_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/plugins"
)

// TestCallStackShrinks: the kept vox_process handle starts with the small
// machine stack, not wazero's 10 KiB one. It fails when a wazero upgrade
// moves the call engine's stack fields, which rewritingEngine then leaves
// alone.
func TestCallStackShrinks(t *testing.T) {
	in, err := load(t, newRuntime(t), "deep_call").Instantiate(context.Background(), plugin.InstanceConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close(context.Background())
	if got := plugin.ProcessStackBytes(in); got != plugin.KeptStackBytes {
		t.Fatalf("vox_process's machine stack is %d bytes, want %d: wazero's call engine no longer has the fields rewritingEngine rewrites", got, plugin.KeptStackBytes)
	}
	// The recursion grows the stack, and every frame on it survives the
	// move.
	recurseDeep(t, in)
	if got := plugin.ProcessStackBytes(in); got <= plugin.KeptStackBytes {
		t.Fatalf("after a 4,000-deep recursion the stack is still %d bytes", got)
	}
}

// TestCallStackStaysSmall: no stock plugin outgrows the kept stack on
// telephony audio at every rate a call can have, so the bytes a call keeps
// per plugin are the kept stack's, not a grown one's.
//
// The exceptions are aec and denoise: SpeexDSP reaches its FFT through
// several frames of many locals, and wazero's stack grows once, in the
// first frame, and stays (measured: aec 22,480 bytes, denoise 14,704, at
// every rate), beside the hundreds of KiB of linear memory their calls
// touch; it must stay under grownLimit.
func TestCallStackStaysSmall(t *testing.T) {
	rt := newRuntime(t)
	configs := map[string]string{"resample": `{"to":48000}`}
	const grownLimit = 32 << 10
	grows := map[string]bool{"aec": true, "denoise": true}
	for _, name := range plugins.Names() {
		p := loadStock(t, rt, name)
		for _, rate := range []int{8000, 16000, 24000} {
			config := configs[name]
			// The budget is not what this measures: a 100 ms frame of aec
			// at 24 kHz takes longer than the default 5 ms on a busy machine.
			in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Config: []byte(config), InputRate: rate, Logger: quiet, Budget: time.Second})
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
			if got := plugin.ProcessStackBytes(in); grows[name] && got > grownLimit || !grows[name] && got != plugin.KeptStackBytes {
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

// TestPooledSetUpHandlesRunInTheirOwnInstance: set-up handles are shared
// by every instance of a plugin, one at a time; each call to one must run
// in the instance that borrowed it.
func TestPooledSetUpHandlesRunInTheirOwnInstance(t *testing.T) {
	eachAppliesItsOwnGain(t, newRuntime(t))
}

// eachAppliesItsOwnGain sets up forty gain instances one after the other,
// each with its own gain (vox_init writes it into that instance's memory,
// through a pooled handle where the runtime pools them), then has all of
// them, live at once, process a sample: each must apply its own gain, as
// gain.c's formula computes it.
func eachAppliesItsOwnGain(t *testing.T, rt *plugin.Runtime) {
	t.Helper()
	p := loadStock(t, rt, "gain")
	var instances []*plugin.Instance
	for i := 0; i < 40; i++ {
		in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Config: []byte(fmt.Sprintf(`{"db":%d}`, i-20)), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close(context.Background())
		if _, err := in.Event(0, 0, nil); err != nil { // an event through a pooled vox_event handle
			t.Fatal(err)
		}
		instances = append(instances, in)
	}
	for i, in := range instances {
		buf := in.Buffer()
		binary.LittleEndian.PutUint16(buf, 1000)
		if _, err := in.Process(1); err != nil {
			t.Fatal(err)
		}
		q16 := int64(math.Pow(10, float64(i-20)/20)*65536 + 0.5)
		want := int16(min(32767, (1000*q16+32768)>>16))
		if got := int16(binary.LittleEndian.Uint16(buf)); got != want {
			t.Errorf("instance %d (%d dB): 1000 became %d, want %d", i, i-20, got, want)
		}
	}
}

// recurseDeep runs deep_call's 4,000 nested calls for three frames, which
// need far more than the kept stack (the guest checks its result).
func recurseDeep(t *testing.T, in *plugin.Instance) {
	t.Helper()
	for frame := 0; frame < 3; frame++ {
		if n, err := in.Process(160); err != nil || n != 160 {
			t.Fatalf("frame %d: Process = %d, %v", frame, n, err)
		}
	}
}

// deepCall checks NewRuntime's err, and gives rt and an instance of
// deep_call to the test's cleanup.
func deepCall(t *testing.T, rt *plugin.Runtime, err error) *plugin.Instance {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	in, err := load(t, rt, "deep_call").Instantiate(context.Background(), plugin.InstanceConfig{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(context.Background()) })
	return in
}

// TestPlainCallEngine: with Options.PlainCallEngine the host leaves
// wazero's handles alone, and plugins run as they do with the rewritten
// ones: vox_process keeps the stack wazero made, grows it for a deep
// recursion, and set-up handles made for each use run in their instance.
func TestPlainCallEngine(t *testing.T) {
	rt, err := plugin.NewRuntime(context.Background(), plugin.Options{CacheDir: "-", PlainCallEngine: true})
	in := deepCall(t, rt, err)
	if got := plugin.ProcessStackBytes(in); got <= plugin.KeptStackBytes {
		t.Fatalf("vox_process's machine stack is %d bytes: the plain engine shared the kept one", got)
	}
	recurseDeep(t, in)
	eachAppliesItsOwnGain(t, rt)
}

// TestCallEngineFallsBackOnAnotherLayout: a handle whose type is not the
// compiler call engine the host rewrites (here the interpreter's, as a
// wazero whose engine changed would have) is left alone, with one warning,
// and plugins are set up and run as with the plain engine.
func TestCallEngineFallsBackOnAnotherLayout(t *testing.T) {
	var logged strings.Builder
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	rt, err := plugin.NewInterpreterRuntime(context.Background(), plugin.Options{CacheDir: "-", Logger: logger})
	in := deepCall(t, rt, err)
	if got := plugin.ProcessStackBytes(in); got != 0 {
		t.Fatalf("the interpreter's handle reads as a compiler call engine with a %d-byte stack", got)
	}
	// (The interpreter's own call depth is too small for deep_call's
	// recursion, which TestPlainCallEngine runs on handles left alone.)
	eachAppliesItsOwnGain(t, rt)
	if n := strings.Count(logged.String(), "does not have the layout voxhost rewrites"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, logged.String())
	}
}

// TestSetUpMakesLittleGarbage: a set-up no longer builds a call engine
// (a 10 KiB stack and its 1.5 KiB struct) for every set-up export it calls;
// after the first instance, an instance of gain costs the bytes it keeps.
// Without the pool: 51 KiB allocated per gain instance.
func TestSetUpMakesLittleGarbage(t *testing.T) {
	p := loadStock(t, newRuntime(t), "gain")
	instantiate := func() {
		in, err := p.Instantiate(context.Background(), plugin.InstanceConfig{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		in.Event(0, 0, nil)
		in.Close(context.Background())
	}
	instantiate()
	const n = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		instantiate()
	}
	runtime.ReadMemStats(&after)
	perInstance := float64(after.TotalAlloc-before.TotalAlloc) / n / 1024
	t.Logf("%.1f KiB allocated per instance set up and closed", perInstance)
	if perInstance > 40 {
		t.Fatalf("an instance's set-up allocates %.1f KiB: set-up handles are no longer pooled", perInstance)
	}
}
