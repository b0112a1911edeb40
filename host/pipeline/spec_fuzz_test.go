package pipeline_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
)

// FuzzParseSpec: any string either parses into stages that name a plugin
// and carry a valid JSON config, or fails with an error — never a panic.
func FuzzParseSpec(f *testing.F) {
	for _, seed := range []string{
		"gain db=-6 | passthrough",
		"vad sensitivity=0.7 | dtmf mute=true | agc target_dbfs=-18 on_error=end_call",
		"./x.wasm name=bob on=true n=1e3",
		"gain || passthrough", "db=3", "gain db", "", "|", "a b=c=d | e f=\"g\"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		stages, err := pipeline.ParseSpec(spec)
		if err != nil {
			return
		}
		if len(stages) == 0 {
			t.Fatalf("%q parsed into no stages without an error", spec)
		}
		for _, s := range stages {
			if s.Plugin == "" || strings.ContainsAny(s.Plugin, "| \t\n=") {
				t.Fatalf("%q: bad plugin reference %q", spec, s.Plugin)
			}
			js, err := s.ConfigJSON()
			if err != nil || !json.Valid(js) {
				t.Fatalf("%q: config %s is not JSON (%v)", spec, js, err)
			}
		}
	})
}
