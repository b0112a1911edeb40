package admin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/internal/admin"
)

// TestRecordingListedAndServed records a call of a route configured with
// recording: in the config file, then lists its files and serves them
// through the admin API, behind the admin token; ids and names that would
// reach other files are refused.
func TestRecordingListedAndServed(t *testing.T) {
	recDir := filepath.Join(t.TempDir(), "recordings")
	h := startHost(t, fmt.Sprintf(`  rec:
    inbound:
      - plugin: flip
    recording:
      dir: %q
      what: [caller, heard]
      min_free_bytes: 1
console: true
auth:
  tokens: [%q]
`, recDir, callToken))
	// A file beside the recordings that no id may reach.
	if err := os.WriteFile(filepath.Join(filepath.Dir(recDir), "secret.wav"), []byte("RIFF secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	sent := bytes.Repeat([]byte{0x15, 0x25, 0x95, 0xA5}, 40*25)
	for _, id := range []string{"adm-1", admin.ConsoleCallPrefix + "rec"} {
		recordedCall(t, h.url, id, sent)
	}

	if status, _, _ := h.request("GET", "/calls/adm-1/recording", "", nil); status != http.StatusUnauthorized {
		t.Fatalf("without the admin token: %d, want 401", status)
	}
	var files []any
	eventually(t, "the recording is listed, whole", func() error {
		status, body := h.admin("GET", "/calls/adm-1/recording", token, nil)
		if status != http.StatusOK {
			return fmt.Errorf("%d %v", status, body)
		}
		recs := body["recordings"].([]any)
		if len(recs) != 1 {
			return fmt.Errorf("%d recordings", len(recs))
		}
		files = recs[0].(map[string]any)["files"].([]any)
		if len(files) != 2 || files[0].(map[string]any)["seconds"].(float64) != 0.5 {
			return fmt.Errorf("files %v", files)
		}
		return nil
	})
	caller := files[0].(map[string]any)
	if caller["stream"] != "caller" || files[1].(map[string]any)["stream"] != "heard" || caller["rate"].(float64) != 8000 {
		t.Fatalf("files: %v", files)
	}
	status, ct, wav := h.request("GET", "/"+caller["url"].(string), token, nil)
	if status != http.StatusOK || ct != "audio/wav" {
		t.Fatalf("GET %s: %d %s", caller["url"], status, ct)
	}
	onDisk, err := os.ReadFile(filepath.Join(recDir, caller["name"].(string)))
	if err != nil || !bytes.Equal(wav, onDisk) {
		t.Fatalf("served %d bytes, the file holds %d (%v)", len(wav), len(onDisk), err)
	}
	want := make([]byte, 2*len(sent))
	codec.DecodeUlaw(want, sent)
	if !bytes.Equal(wav[44:], want) {
		t.Fatal("the caller's file is not the μ-law the call sent, decoded")
	}

	for _, path := range []string{
		"/calls/adm-2/recording",
		"/calls/..%2Fsecret/recording",
		"/calls/adm-1/recording/..%2F..%2Fsecret.wav",
		"/calls/adm-1/recording/" + strings.Replace(caller["name"].(string), "caller", "caller_processed", 1),
		"/calls/%2E%2E/recording",
	} {
		if status, _, body := h.request("GET", path, token, nil); status != http.StatusNotFound || bytes.Contains(body, []byte("secret")) && !bytes.Contains(body, []byte("error")) {
			t.Errorf("GET %s: %d %s, want 404", path, status, body)
		}
	}
}

const callToken = "call-secret"

// recordedCall sends audio through the route rec as the call id, one
// frame at a time, each answered before the next.
func recordedCall(t *testing.T, url, id string, audio []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, strings.Replace(url, "http", "ws", 1)+"/ws?pipeline=rec&call_id="+id,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + callToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for off := 0; off < len(audio); off += 160 {
		if err := c.Write(ctx, websocket.MessageBinary, audio[off:off+160]); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// TestConsoleAPIServesTheConsolesRecordingsOnly reads recordings through
// the console API of the main listener (console: true), with a call
// token: a call the console placed is listed and served, any other is not.
func TestConsoleAPIServesTheConsolesRecordingsOnly(t *testing.T) {
	recDir := t.TempDir()
	h := startHost(t, fmt.Sprintf(`  rec:
    inbound:
      - plugin: flip
    recording:
      dir: %q
      min_free_bytes: 1
console: true
auth:
  tokens: [%q]
`, recDir, callToken))
	audio := bytes.Repeat([]byte{0x15, 0x95}, 800)
	console := admin.ConsoleCallPrefix + "0123abcd"
	recordedCall(t, h.url, "carrier-1", audio)
	recordedCall(t, h.url, console, audio)
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", h.url+"/console/api"+path, nil)
		req.Header.Set("Authorization", "Bearer "+callToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type")
	}
	eventually(t, "the console's call is listed", func() error {
		if status, _ := get("/calls/" + console + "/recording"); status != http.StatusOK {
			return fmt.Errorf("status %d", status)
		}
		return nil
	})
	recs, err := recording.Find([]string{recDir}, console)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	if status, ct := get("/calls/" + console + "/recording/" + url.PathEscape(recs[0].Files[0].Name)); status != http.StatusOK || ct != "audio/wav" {
		t.Fatalf("the console's file: %d %s", status, ct)
	}
	other, _ := recording.Find([]string{recDir}, "carrier-1")
	if len(other) != 1 {
		t.Fatal("the carrier's call was not recorded")
	}
	for _, path := range []string{"/calls/carrier-1/recording", "/calls/carrier-1/recording/" + url.PathEscape(other[0].Files[0].Name)} {
		if status, _ := get(path); status != http.StatusNotFound {
			t.Errorf("GET /console/api%s with a call token: %d, want 404", path, status)
		}
	}
}
