package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/config"
)

// recorded begins a route whose recording: is on line 4.
const recorded = "pipelines:\n  main:\n    inbound: [{plugin: passthrough}]\n    recording:\n"

func TestRecordingConfig(t *testing.T) {
	cfg, err := config.Parse("voxhost.yaml", []byte(recorded+"      dir: /var/lib/voxhost/rec\n      what: [caller, reference]\n      max_seconds: 600\n      min_free_bytes: 1073741824\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Pipelines["main"].Recording
	if r == nil || r.Dir != "/var/lib/voxhost/rec" || !slices.Equal(r.What, []string{"caller", "reference"}) || r.MaxSeconds != 600 || r.MinFreeBytes != 1<<30 {
		t.Fatalf("recording: %+v", r)
	}
	if cfg, err := config.Parse("voxhost.yaml", []byte(stage)); err != nil || cfg.Pipelines["main"].Recording != nil {
		t.Fatalf("a route without recording: records: %+v, %v", cfg.Pipelines["main"].Recording, err)
	}

	for _, tc := range []struct{ name, data, prefix, msg string }{
		{"no dir", recorded + "      what: [caller]\n", "voxhost.yaml:5:7: ", "pipelines.main.recording.dir: missing; give the directory"},
		{"unknown stream", recorded + "      dir: /r\n      what: [caller, bot]\n", "voxhost.yaml:6:22: ", `pipelines.main.recording.what[1]: unknown stream "bot" (want caller, caller_processed, heard, reference)`},
		{"stream twice", recorded + "      dir: /r\n      what: [heard, heard]\n", "voxhost.yaml:6:21: ", "pipelines.main.recording.what[1]: heard is listed twice"},
		{"nothing to record", recorded + "      dir: /r\n      what: []\n", "voxhost.yaml:6:13: ", "pipelines.main.recording.what: empty"},
		{"zero max_seconds", recorded + "      dir: /r\n      max_seconds: 0\n", "voxhost.yaml:6:20: ", "pipelines.main.recording.max_seconds: must be positive, got 0"},
		{"too long", recorded + "      dir: /r\n      max_seconds: 86401\n", "voxhost.yaml:6:20: ", "must be from 1 to 86400 (a day), got 86401"},
		{"unknown key", recorded + "      dir: /r\n      max_second: 10\n", "voxhost.yaml:6:7: ", `unknown key "max_second" (want one of: dir, max_seconds, min_free_bytes, what)`},
		{"negative floor", recorded + "      dir: /r\n      min_free_bytes: -1\n", "voxhost.yaml:6:23: ", "-1 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("voxhost.yaml", []byte(tc.data))
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.data)
			}
			if got := err.Error(); !strings.HasPrefix(got, tc.prefix) || !strings.Contains(got[len(tc.prefix):], tc.msg) {
				t.Errorf("got  %s\nwant %s...%s...", got, tc.prefix, tc.msg)
			}
		})
	}
}
