package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
)

// logLines decodes a JSON handler's output, one object a line.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestRouteRatesAreLoggedOnceAtInfo is issue 21's item 8: a route with
// "resample to=24000" logged the resampler's ERROR for every caller rate
// the host tried at start-up. Trying rates is no error: start-up says
// once, at info, which rates the route takes, and what the plugin said
// about a rate it refuses is in the reason a call at that rate is given.
func TestRouteRatesAreLoggedOnceAtInfo(t *testing.T) {
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	h := newRoutesHost(t, plugin.Options{Logger: logger}, map[string]routeSpec{
		// 36 kHz is 3/2 of a 24 kHz caller's rate, which the resampler
		// takes, and 9/4 or 9/2 of the others', which it refuses.
		"main": {inbound: "resample to=36000 | resample to=24000"},
	}, func(o *server.Options) { o.Logger = logger })

	var rates []string
	for _, line := range logLines(t, logs.String()) {
		if line["level"] != "INFO" {
			t.Errorf("start-up logged at %v: %v", line["level"], line)
		}
		if line["msg"] == "route takes callers at" && line["pipeline"] == "main" {
			rates = append(rates, line["rates_hz"].(string))
		}
	}
	// Only a 24 kHz caller gets through both resamplers.
	if len(rates) != 1 || rates[0] != "24000" {
		t.Fatalf("start-up said the route takes %q, want one line of 24000", rates)
	}

	c := dial(t, h.url+"/ws?codec=l16&rate=16000")
	defer c.CloseNow()
	if _, _, err := c.Read(context.Background()); websocket.CloseStatus(err) != websocket.StatusUnsupportedData {
		t.Fatalf("a 16 kHz caller: %v, want 1003", err)
	}
	for _, line := range logLines(t, logs.String()) {
		if line["msg"] == "route cannot take the caller's audio" {
			if err, _ := line["err"].(string); !strings.Contains(err, `the ratio of "to" and the input rate must be`) {
				t.Fatalf("a refused 16 kHz call's reason leaves out what the resampler said: %q", err)
			}
			return
		}
	}
	t.Fatalf("a refused 16 kHz call was not logged:\n%s", logs.String())
}
