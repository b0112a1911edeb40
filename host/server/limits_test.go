package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// A client's string that the host would keep past transport's bounds ends
// the call with "policy violation" (1008) and a reason naming the value,
// and is counted; the call beside it goes on.
func TestOverlongClientStringsEndTheCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	bystander := dial(t, h.url+"/ws?call_id=CA6e7e6e17d4f4e1e5a2b0d3c9f1e2a3b4")
	defer bystander.CloseNow()
	ctx := context.Background()
	start := func(callSid, params string) []byte {
		return twilioMsg("start", 1, fmt.Sprintf(`"start":{"streamSid":"MZ1","callSid":%q,"tracks":["inbound"],`+
			`"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":%s}`, callSid, params))
	}
	var many []string
	for i := range 33 {
		many = append(many, fmt.Sprintf(`"p%d":"v"`, i))
	}
	for _, tc := range []struct {
		name, path string
		msg        []byte
		reason     string
	}{
		{"60 KB callSid", "/twilio", start(strings.Repeat("9", 60000), "{}"), "twilio: start.callSid of 60000 bytes is longer than 64"},
		{"callSid with a line break", "/twilio", start("CA1\nforged", "{}"), `twilio: start.callSid has '\n' at byte 3`},
		{"too many parameters", "/twilio", start("CA1", "{"+strings.Join(many, ",")+"}"), "twilio: start.customParameters has 33 parameters, more than 32"},
		{"long pipeline parameter", "/twilio", start("CA1", fmt.Sprintf(`{"pipeline":%q}`, strings.Repeat("p", 513))),
			`twilio: start.customParameters["pipeline"] is 513 bytes, longer than 512`},
		{"long raw mark", "/ws", []byte(fmt.Sprintf(`{"event":"mark","name":%q}`, strings.Repeat("m", 300))), "raw: mark name of 300 bytes is longer than 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, h.url+tc.path)
			defer c.CloseNow()
			if err := c.Write(ctx, websocket.MessageText, tc.msg); err != nil {
				t.Fatal(err)
			}
			code, reason := closeOf(t, c)
			if code != websocket.StatusPolicyViolation || !strings.HasPrefix(reason, tc.reason) {
				t.Fatalf("close %v %q, want %v %q", code, reason, websocket.StatusPolicyViolation, tc.reason)
			}
		})
	}
	assertMetric(t, h, `voxhost_malformed_messages_total{protocol="twilio",reason="limit"} 4`)
	assertMetric(t, h, `voxhost_malformed_messages_total{protocol="raw",reason="limit"} 1`)
	if err := bystander.Write(ctx, websocket.MessageBinary, stamp(1, 1)); err != nil {
		t.Fatal(err)
	}
	if _, msg := readMessage(t, bystander); string(msg) != string(stamp(1, 1)) {
		t.Fatal("the bystander call was disturbed")
	}
}

// Query parameters the call would keep are checked before the upgrade: a
// bad one is refused with 400 and a reason, and counted.
func TestBadQueryParametersAreRefused(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	before := h.rt.LiveInstances()
	for _, tc := range []struct{ query, reason string }{
		{"call_id=" + strings.Repeat("c", 65), "call_id of 65 bytes is longer than 64"},
		{"call_id=" + url.QueryEscape("a\nb"), `call_id has '\n' at byte 1`},
		{"pipeline=" + strings.Repeat("p", 60000), "pipeline of 60000 bytes is longer than 512"},
	} {
		for _, path := range []string{"/ws", "/twilio"} {
			ctx := context.Background()
			_, resp, err := websocket.Dial(ctx, h.url+path+"?"+tc.query, nil)
			if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s?%.40s: %v (%v), want 400", path, tc.query, resp, err)
			}
			body := make([]byte, 200)
			n, _ := resp.Body.Read(body)
			resp.Body.Close()
			if !strings.HasPrefix(string(body[:n]), tc.reason) {
				t.Errorf("%s?%.40s: refused with %q, want %q", path, tc.query, body[:n], tc.reason)
			}
		}
	}
	if h.rt.LiveInstances() != before {
		t.Fatal("a refused connection instantiated plugins")
	}
	assertMetric(t, h, `voxhost_rejected_connections_total{reason="bad_query"} 6`)
}
