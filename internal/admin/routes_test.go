package admin_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outboundOnly is a route whose plugin shaper runs only on what the caller
// hears: an echo through passthrough, then shaper.
const outboundOnly = "  o:\n    inbound: [{plugin: passthrough}]\n    outbound: [{plugin: shaper}]\n"

// TestOutboundPluginIsRebuiltAndKept: a plugin used only by a route's
// outbound stages is in use as much as an inbound one: an upload rebuilds
// the route, and a delete is refused.
func TestOutboundPluginIsRebuiltAndKept(t *testing.T) {
	h := startHost(t, "")
	if err := os.WriteFile(filepath.Join(h.dir, "shaper.wasm"), wasm(t, "negate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.config, []byte(configYAML(h.dir, outboundOnly)), 0o644); err != nil {
		t.Fatal(err)
	}
	if status, body := h.admin("POST", "/reload", token, nil); status != http.StatusOK || fmt.Sprint(body["added"]) != "[o]" {
		t.Fatalf("POST /reload: %d %v", status, body)
	}
	if err := h.newCall("o", v1); err != nil {
		t.Fatalf("a call through the outbound negate: %v", err)
	}
	status, body := h.admin("GET", "/pipelines", token, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /pipelines: %d %v", status, body)
	}
	var o map[string]any
	for _, p := range body["pipelines"].([]any) {
		if p := p.(map[string]any); p["name"] == "o" {
			o = p
		}
	}
	if o == nil || fmt.Sprint(o["stages"].([]any)[0].(map[string]any)["plugin"]) != "passthrough" ||
		fmt.Sprint(o["outbound"].([]any)[0].(map[string]any)["sha256"]) != sha(wasm(t, "negate")) || o["upstream"] != nil {
		t.Errorf("GET /pipelines: route o is %v", o)
	}
	if status, body := h.admin("GET", "/plugins/shaper", token, nil); status != http.StatusOK || fmt.Sprint(body["used_by"]) != "[o]" {
		t.Errorf("GET /plugins/shaper: %d %v", status, body)
	}

	status, body = h.admin("PUT", "/plugins/shaper", token, wasm(t, "halve"))
	if status != http.StatusOK || fmt.Sprint(body["pipelines_reloaded"]) != "[o]" {
		t.Fatalf("PUT /plugins/shaper: %d %v", status, body)
	}
	if err := h.newCall("o", v2); err != nil {
		t.Errorf("after the upload, a call on o: %v", err)
	}
	if err := h.newCall("p", v1); err != nil {
		t.Errorf("after the upload, a call on p, which does not use shaper: %v", err)
	}

	status, body = h.admin("DELETE", "/plugins/shaper", token, nil)
	if status != http.StatusConflict || fmt.Sprint(body["used_by"]) != "[o]" || !strings.Contains(fmt.Sprint(body["error"]), "used by pipeline o") {
		t.Errorf("DELETE a plugin used by an outbound list: %d %v", status, body)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "shaper.wasm")); err != nil {
		t.Errorf("the refused delete removed the file: %v", err)
	}
}

// TestHeaderSecretsStayHidden: the value of an upstream header, from the
// environment or the file, appears in no admin answer, no error and no log
// line; the admin API names the header.
func TestHeaderSecretsStayHidden(t *testing.T) {
	const secret, literal = "tok-from-env-31337", "literal-secret-4242"
	t.Setenv("VOXHOST_TEST_ADMIN_BOT_TOKEN", secret)
	route := func(inbound string) string {
		return fmt.Sprintf(`  bot:
    inbound: [{plugin: %s}]
    upstream:
      url: "ws://127.0.0.1:9/{call_id}"
      protocol: twilio
      headers:
        Authorization: "Bearer ${VOXHOST_TEST_ADMIN_BOT_TOKEN}"
        x-api-key: %s
      on_failure: echo
`, inbound, literal)
	}
	h := startHost(t, route("passthrough"))
	hidden := func(what string, status int, body map[string]any) {
		t.Helper()
		if shown := fmt.Sprint(body); strings.Contains(shown, secret) || strings.Contains(shown, literal) {
			t.Errorf("%s (%d) shows a header value: %s", what, status, shown)
		}
	}

	status, body := h.admin("GET", "/pipelines", token, nil)
	hidden("GET /pipelines", status, body)
	var up map[string]any
	for _, p := range body["pipelines"].([]any) {
		if p := p.(map[string]any); p["name"] == "bot" {
			up, _ = p["upstream"].(map[string]any)
		}
	}
	if fmt.Sprint(up["headers"]) != "[Authorization X-Api-Key]" || up["protocol"] != "twilio" || up["codec"] != "mulaw" ||
		up["rate"] != 8000.0 || up["on_failure"] != "echo" || up["connect_timeout"] != "3s" || up["url"] != "ws://127.0.0.1:9/{call_id}" {
		t.Errorf("GET /pipelines: upstream %v", up)
	}
	status, body = h.admin("GET", "/plugins", token, nil)
	hidden("GET /plugins", status, body)

	// Reloads that fail: an unknown plugin (the route is built), a header
	// value with a line break (the file is checked).
	if err := os.WriteFile(h.config, []byte(configYAML(h.dir, route("reverb"))), 0o644); err != nil {
		t.Fatal(err)
	}
	status, body = h.admin("POST", "/reload", token, nil)
	hidden("a reload with an unknown plugin", status, body)
	if status != http.StatusBadRequest {
		t.Errorf("a reload with an unknown plugin: %d %v", status, body)
	}
	t.Setenv("VOXHOST_TEST_ADMIN_BOT_TOKEN", secret+"\nX-Evil: 1")
	if err := os.WriteFile(h.config, []byte(configYAML(h.dir, route("passthrough"))), 0o644); err != nil {
		t.Fatal(err)
	}
	status, body = h.admin("POST", "/reload", token, nil)
	hidden("a reload with a line break in a header", status, body)
	if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), "headers.Authorization: the value holds a line break") {
		t.Errorf("a reload with a line break in a header: %d %v", status, body)
	}
	// A good reload, which logs the routes.
	t.Setenv("VOXHOST_TEST_ADMIN_BOT_TOKEN", secret+"-2")
	status, body = h.admin("POST", "/reload", token, nil)
	hidden("a reload", status, body)
	if status != http.StatusOK || fmt.Sprint(body["rebuilt"]) != "[bot]" {
		t.Errorf("a reload with a new token: %d %v", status, body)
	}
	if logs := h.log.String(); strings.Contains(logs, secret) || strings.Contains(logs, literal) {
		t.Errorf("the log shows a header value:\n%s", logs)
	}
}
