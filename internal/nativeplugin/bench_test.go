//go:build cgo

package nativeplugin_test

import (
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/nativeplugin"
	"github.com/voxhost/voxhost/internal/signal"
)

// benchPlugins are the natively built plugins with a config that runs at
// 8 kHz, as a frame sees them in a call (dtmf only in a build with -tags
// nativerust).
var benchPlugins = []struct{ name, spec, config string }{
	{"gain", "gain db=-6", `{"db": -6}`},
	{"vad", "vad", `{}`},
	{"resample", "resample to=16000", `{"to": 16000}`},
	{"gate", "gate", `{}`},
	{"agc", "agc", `{}`},
	{"tone", "tone", `{}`},
	{"dtmf", "dtmf", `{}`},
}

// BenchmarkWebAssembly and BenchmarkNative time one 20 ms 8 kHz frame of
// speech through one stage of each plugin, as its .wasm under the host and
// as its C source compiled for the host: their ratio is what the sandbox
// costs. Under callgrind (GODEBUG=asyncpreemptoff=1) the instruction
// counts per frame compare whatever the machine's load.
func BenchmarkWebAssembly(b *testing.B) {
	c := hosttest.Catalog(b)
	for _, bp := range benchPlugins {
		if !nativeplugin.Available(bp.name) {
			continue
		}
		b.Run(bp.name, func(b *testing.B) {
			hosttest.BenchFrames(b, hosttest.Pipeline(b, c, bp.spec, pipeline.CallConfig{}), signal.Speech(8000, 0.02))
		})
	}
}

func BenchmarkNative(b *testing.B) {
	for _, bp := range benchPlugins {
		if !nativeplugin.Available(bp.name) {
			continue
		}
		b.Run(bp.name, func(b *testing.B) {
			s, err := nativeplugin.Open(bp.name, []byte(bp.config), 8000)
			if err != nil {
				b.Fatal(err)
			}
			p, err := pipeline.New([]pipeline.Stage{s}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(b.Context())
			hosttest.BenchFrames(b, p, signal.Speech(8000, 0.02))
		})
	}
}
