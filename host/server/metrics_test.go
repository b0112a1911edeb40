package server_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestEventLabelsAreBounded runs a plugin that emits a name never used
// before in every emit it may make. The client must still get every name
// as the plugin spelt it, but /metrics may only grow the well-known names
// and "other": a label value is a Prometheus series kept for good.
func TestEventLabelsAreBounded(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough", "names": "passthrough | " + testdataPlugin("emit_names")}, nil)
	const frames = 40
	_, events, err := stream(h.url+"/ws?pipeline=names", ulawSpeech(frames*0.02))
	if err != nil {
		t.Fatal(err)
	}
	eventName := regexp.MustCompile(`"name":"([^"]*)"`)
	names := map[string]int{}
	for _, e := range events {
		if m := eventName.FindStringSubmatch(e); m != nil {
			names[m[1]]++
		}
	}
	if names["speech_start"] != frames || len(names) != 1+31*frames {
		t.Fatalf("the client got %d distinct names, speech_start %d times; want %d names, speech_start %d times",
			len(names), names["speech_start"], 1+31*frames, frames)
	}
	assertMetric(t, h, `voxhost_plugin_events_total{name="other",plugin="emit_names.wasm"} 1240`)
	var series []string
	for _, line := range strings.Split(metrics(t, h), "\n") {
		if strings.HasPrefix(line, "voxhost_plugin_events_total{") {
			series = append(series, line)
		}
	}
	want := []string{
		`voxhost_plugin_events_total{name="other",plugin="emit_names.wasm"} 1240`,
		`voxhost_plugin_events_total{name="speech_start",plugin="emit_names.wasm"} 40`,
	}
	if strings.Join(series, "\n") != strings.Join(want, "\n") {
		t.Fatalf("event series:\n%s\nwant:\n%s", strings.Join(series, "\n"), strings.Join(want, "\n"))
	}
}
