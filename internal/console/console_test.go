package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// post makes a request with the bearer token tok and decodes the JSON
// answer.
func post(t *testing.T, method, u, tok string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %q", method, u, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

func wsURL(base, query string) string {
	return strings.Replace(base, "http://", "ws://", 1) + "/console/call?" + query
}

// TestTickets checks the console's login for calls: a ticket comes only
// with the listener's token, places one call, and says why a call it
// placed was refused; the page and its assets need no token.
func TestTickets(t *testing.T) {
	h := startHost(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, l := range []struct{ base, tok, other string }{
		{h.adminURL, adminToken, callToken},
		{h.callURL, callToken, adminToken},
	} {
		for _, path := range []string{"/console/", "/console/console.js", "/console/capture-worklet.js"} {
			resp, err := http.Get(l.base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" {
				t.Errorf("GET %s%s: %d, CSP %q", l.base, path, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
			}
			if strings.HasSuffix(path, ".js") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
				t.Errorf("GET %s: Content-Type %q", path, resp.Header.Get("Content-Type"))
			}
		}
		for _, tok := range []string{"", l.other} {
			if status, body := post(t, "POST", l.base+"/console/tickets", tok); status != http.StatusUnauthorized {
				t.Errorf("POST /console/tickets with %q: %d %v", tok, status, body)
			}
		}
		status, body := post(t, "POST", l.base+"/console/tickets", l.tok)
		if status != http.StatusCreated {
			t.Fatalf("POST /console/tickets: %d %v", status, body)
		}
		ticket := body["ticket"].(string)
		c, _, err := websocket.Dial(ctx, wsURL(l.base, url.Values{"ticket": {ticket}, "pipeline": {"talk"}}.Encode()), nil)
		if err != nil {
			t.Fatalf("calling with a ticket: %v", err)
		}
		if err := c.Write(ctx, websocket.MessageBinary, make([]byte, 160)); err != nil {
			t.Fatal(err)
		}
		if typ, msg, err := c.Read(ctx); err != nil || typ != websocket.MessageBinary || len(msg) != 160 {
			t.Fatalf("the call's answer: %v %d bytes, %v", typ, len(msg), err)
		}
		c.Close(websocket.StatusNormalClosure, "")
		// A ticket places one call.
		if _, resp, err := websocket.Dial(ctx, wsURL(l.base, "ticket="+ticket), nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a used ticket: %v", err)
		}
		if _, resp, err := websocket.Dial(ctx, wsURL(l.base, "ticket=nonsense"), nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("an unknown ticket: %v", err)
		}
		// A refused call's reason is kept under its ticket.
		_, body = post(t, "POST", l.base+"/console/tickets", l.tok)
		ticket = body["ticket"].(string)
		if _, resp, err := websocket.Dial(ctx, wsURL(l.base, url.Values{"ticket": {ticket}, "pipeline": {"nope"}}.Encode()), nil); err == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("an unknown pipeline: %v", err)
		}
		status, body = post(t, "GET", l.base+"/console/tickets/"+ticket, l.tok)
		refused, _ := body["refused"].(map[string]any)
		if status != http.StatusOK || refused == nil || refused["status"] != float64(http.StatusNotFound) || !strings.Contains(refused["error"].(string), `unknown pipeline "nope"`) {
			t.Errorf("GET /console/tickets/T of a refused call: %d %v", status, body)
		}
	}
}

// TestConsoleAPI checks what the console API on the main listener shows a
// caller: the routes without their bots' URLs, and no call but its own.
func TestConsoleAPI(t *testing.T) {
	h := startHost(t)
	status, body := post(t, "GET", h.adminURL+"/pipelines", adminToken)
	if status != http.StatusOK || !strings.Contains(fmt.Sprint(body), "ws://127.0.0.1") {
		t.Fatalf("the admin API's GET /pipelines: %d %v", status, body)
	}
	status, body = post(t, "GET", h.callURL+"/console/api/pipelines", callToken)
	if status != http.StatusOK || strings.Contains(fmt.Sprint(body), "ws://") || !strings.Contains(fmt.Sprint(body), "protocol:raw") {
		t.Errorf("the console API's GET /pipelines shows %d %v", status, body)
	}
	for _, tc := range []struct {
		method, path, tok string
		status            int
	}{
		{"GET", "/console/api/pipelines", "", http.StatusUnauthorized},
		{"GET", "/console/api/pipelines", adminToken, http.StatusUnauthorized},
		{"GET", "/console/api/calls/raw-1", callToken, http.StatusNotFound},
		{"GET", "/console/api/calls", callToken, http.StatusNotFound},
		{"GET", "/console/api/plugins", callToken, http.StatusNotFound},
		{"POST", "/console/api/reload", callToken, http.StatusNotFound},
	} {
		if status, body := post(t, tc.method, h.callURL+tc.path, tc.tok); status != tc.status {
			t.Errorf("%s %s with %q: %d %v, want %d", tc.method, tc.path, tc.tok, status, body, tc.status)
		}
	}
}
