//go:build cgo

package nativeplugin_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/nativeplugin"
	"github.com/voxhost/voxhost/internal/signal"
)

type counter struct{ n int64 }

func (c *counter) Emit(_, _ string, _ []byte) { c.n++ }

// TestSameBitsAsWebAssembly: each native build, given the config and the
// audio its WebAssembly build gets, produces the same samples bit for bit
// and emits as many events, every time it is opened: the native column of
// bench hop measures the same program.
func TestSameBitsAsWebAssembly(t *testing.T) {
	c := hosttest.Catalog(t)
	speech := signal.Mix(signal.Speech(8000, 3), signal.Noise(8000, 3, 0.01, 7))
	// Keys with the pauses between them, then speech with a key over it.
	keys := signal.Concat(signal.DTMF(8000, '1', 80, 0.3, 0, 0), signal.Silence(8000, 60),
		signal.DTMF(8000, '#', 50, 0.1, 4, 0.01), signal.Silence(8000, 5), signal.DTMF(8000, '#', 50, 0.1, 4, 0.01),
		signal.Silence(8000, 60), signal.DTMF(8000, 'D', 120, 0.05, -3, -0.02), signal.Silence(8000, 100))
	dtmf := signal.Concat(keys, signal.Mix(speech, signal.Concat(signal.Silence(8000, 1500), signal.DTMF(8000, '7', 200, 0.2, 0, 0))))
	type run struct {
		plugin string
		params map[string]any
		rate   int
	}
	cases := []run{
		{"gain", map[string]any{"db": -6.5}, 8000},
		{"gain", map[string]any{"db": 20}, 8000},
		{"resample", map[string]any{"to": 16000}, 8000},
		{"resample", map[string]any{"to": 48000}, 8000},
		{"resample", map[string]any{"to": 8000}, 16000},
		{"resample", map[string]any{"to": 24000}, 16000},
		{"vad", nil, 8000},
		{"gate", nil, 8000},
		{"gate", map[string]any{"threshold_dbfs": -30, "floor_db": -20, "hold_ms": 40, "attack_ms": 0.5}, 16000},
		{"agc", nil, 8000},
		{"agc", map[string]any{"target_dbfs": -12, "window_ms": 40, "attack_ms": 3, "gate_dbfs": -70}, 24000},
		{"tone", nil, 8000},
		{"tone", map[string]any{"kind": "beep", "hz": 1004, "on_ms": 130, "off_ms": 70, "ramp_ms": 9, "mode": "replace"}, 16000},
		{"tone", map[string]any{"kind": "noise", "level_dbfs": -6, "seed": 99}, 8000},
	}
	if nativeplugin.Available("dtmf") {
		cases = append(cases, run{"dtmf", nil, 8000}, run{"dtmf", map[string]any{"mute": true}, 8000})
	}
	// Three times: a native build's state lives as long as the process, so
	// vad and dtmf, opened again, must start the call afresh at vox_rate as
	// a new instance does (vad did not, and emitted one event more than its
	// .wasm from its third Open on).
	for _, tc := range slices.Concat(cases, cases, cases) {
		var config []byte
		if tc.params != nil {
			config, _ = json.Marshal(tc.params)
		}
		spec := tc.plugin
		for k, v := range tc.params {
			spec += fmt.Sprintf(" %s=%v", k, v)
		}
		pcm := speech
		if tc.plugin == "dtmf" {
			pcm = dtmf
		} else if tc.rate != 8000 {
			pcm = signal.Mix(signal.Speech(tc.rate, 3), signal.Noise(tc.rate, 3, 0.01, 7))
		}
		frame := tc.rate / 50 * 2
		wasmEvents := &counter{}
		want := hosttest.Process(t, hosttest.Pipeline(t, c, spec, pipeline.CallConfig{InputRate: tc.rate, Sink: wasmEvents}), pcm, frame)

		s, err := nativeplugin.Open(tc.plugin, config, tc.rate)
		if err != nil {
			t.Fatal(err)
		}
		emitted := s.Emits()
		p, err := pipeline.New([]pipeline.Stage{s}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := hosttest.Process(t, p, pcm, frame)
		p.Close(t.Context())
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the native build's %d bytes differ from the WebAssembly build's %d", spec, len(got), len(want))
		}
		if n := s.Emits() - emitted; n != wasmEvents.n {
			t.Errorf("%s: the native build emitted %d events, the WebAssembly build %d", spec, n, wasmEvents.n)
		}
		t.Logf("%s at %d Hz: %d bytes, %d events, the same", spec, tc.rate, len(got), wasmEvents.n)
	}
}

// TestOneAtATime: a plugin's state is its C globals, so a second Open of it
// fails until the first is closed.
func TestOneAtATime(t *testing.T) {
	a, err := nativeplugin.Open("gain", nil, 8000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nativeplugin.Open("gain", nil, 8000); err == nil {
		t.Fatal("a second gain opened while the first was open")
	}
	a.Close(t.Context())
	b, err := nativeplugin.Open("gain", nil, 8000)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	b.Close(t.Context())
	if _, err := nativeplugin.Open("passthrough", nil, 8000); err == nil || nativeplugin.Available("passthrough") {
		t.Error("passthrough (WAT) has a native build")
	}
	if _, err := nativeplugin.Open("resample", []byte(`{"to": 44100}`), 8000); err == nil {
		t.Error("resample to 44100 from 8000 opened")
	}
}
