package admin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/internal/admin"
	"github.com/voxhost/voxhost/internal/app"
	"github.com/voxhost/voxhost/internal/hosttest"
)

const token = "admin-secret"

// logBuffer collects a host's log lines; tests look for the ones an
// operator would.
type logBuffer struct{ hosttest.LogBuffer }

// count counts the log lines that contain every one of parts.
func (b *logBuffer) count(parts ...string) int {
	n := 0
	for _, line := range strings.Split(b.String(), "\n") {
		all := line != ""
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// host is a voxhost serve, started from a config file as the CLI starts it,
// with its admin API and plugin directory watcher.
type host struct {
	t         *testing.T
	h         *app.Host
	dir       string // plugins_dir
	config    string // the config file
	url       string // http://calls
	adminURL  string // http://admin
	log       *logBuffer
	stop      func()
	serveDone chan error
}

func wasm(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// configYAML is a config with pipeline p = [flip], flip being NAME.wasm in
// the plugin directory; extra is appended.
//
// Admission is generous: these tests place bursts of calls (100 at once in
// TestReplaceUnderLoad) that must all be let in, and on a busy machine,
// under the race detector, set-ups one at a time outlast the default
// setup_wait of 2 s and the burst was refused in part (HTTP 503). Refusing
// a burst is host/server's to test.
func configYAML(dir, extra string) string {
	return fmt.Sprintf(`listen: "127.0.0.1:0"
plugins_dir: %q
cache_dir: "-"
limits:
  drain_timeout: 5s
  max_calls: 500
  setup_wait: 1m
  cpu_high_water_percent: 0
admin:
  listen: "127.0.0.1:0"
  tokens: [%q]
default_pipeline: p
pipelines:
  p:
    - plugin: flip
%s`, dir, token, extra)
}

// startHost writes flip.wasm (negate) and the config, and serves.
func startHost(t *testing.T, extra string) *host {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flip.wasm"), wasm(t, "negate"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "voxhost.yaml")
	if err := os.WriteFile(path, []byte(configYAML(dir, extra)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := app.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	o := app.Overrides{CacheDir: "-"}
	if err := app.Apply(&cfg, o); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithCancel(context.Background())
	h, err := app.New(ctx, cfg, logger)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	h.SetConfigFile(path, o)
	ready := make(chan net.Addr, 1)
	hs := &host{t: t, h: h, dir: dir, config: path, log: logs, serveDone: make(chan error, 1)}
	go func() { hs.serveDone <- h.ListenAndServe(ctx, func(a net.Addr) { ready <- a }) }()
	select {
	case a := <-ready:
		hs.url = "http://" + a.String()
		hs.adminURL = "http://" + h.AdminAddr().String()
	case err := <-hs.serveDone:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	hs.stop = func() {
		cancel()
		select {
		case <-hs.serveDone:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
		h.Close(context.Background())
	}
	t.Cleanup(hs.stop)
	return hs
}

// admin makes an admin API request and decodes the JSON answer.
func (h *host) admin(method, path, tok string, body []byte) (int, map[string]any) {
	h.t.Helper()
	status, ct, raw := h.request(method, path, tok, body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		h.t.Fatalf("%s %s: %d, not JSON: %q", method, path, status, raw)
	}
	if ct != "application/json" {
		h.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return status, out
}

// request makes an admin API request and returns the status, the
// Content-Type and the body.
func (h *host) request(method, path, tok string, body []byte) (int, string, []byte) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.adminURL+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), raw
}

// pluginSHA is the sha256 GET /plugins reports for name, or "".
func (h *host) pluginSHA(name string) string {
	h.t.Helper()
	status, body := h.admin("GET", "/plugins", token, nil)
	if status != http.StatusOK {
		h.t.Fatalf("GET /plugins: %d %v", status, body)
	}
	for _, p := range body["plugins"].([]any) {
		if p := p.(map[string]any); p["name"] == name {
			return p["sha256"].(string)
		}
	}
	return ""
}

// metric reads one sample from GET /metrics on the call listener.
func (h *host) metric(series string) string {
	h.t.Helper()
	resp, err := http.Get(h.url + "/metrics")
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// stamp is frame i of call k: 160 μ-law bytes, distinct per call and frame.
func stamp(k, i int) []byte {
	b := make([]byte, 160)
	for j := range b {
		b[j] = byte((k*131 + i*7 + j*3) % 256)
	}
	b[0], b[1], b[2] = byte(k), byte(k>>8), byte(i)
	return b
}

// through is what a plugin applying f to every sample makes of a μ-law
// frame, through the host's codec as a live call goes.
func through(frame []byte, f func(int16) int16) []byte {
	pcm := make([]byte, 2*len(frame))
	codec.DecodeUlaw(pcm, frame)
	for j := 0; j < len(pcm); j += 2 {
		s := f(int16(binary.LittleEndian.Uint16(pcm[j:])))
		binary.LittleEndian.PutUint16(pcm[j:], uint16(s))
	}
	out := make([]byte, len(frame))
	codec.EncodeUlaw(out, pcm)
	return out
}

func negate(s int16) int16 {
	if s == -32768 {
		return 32767
	}
	return -s
}

func halve(s int16) int16 { return s >> 1 }

var (
	v1 = func(k, i int) []byte { return through(stamp(k, i), negate) }
	v2 = func(k, i int) []byte { return through(stamp(k, i), halve) }
)

// call streams frames audio frames of call k, one every 20 ms, and checks
// that reply i is want(k, i): none lost, none reordered, each processed by
// the version want stands for. progress, if not nil, is called after each
// reply. With a release channel the call goes on streaming past frames
// until release is closed, so that it is still under way whenever the test
// gets to look, however slow the machine; it returns how many frames it
// sent.
func call(ctx context.Context, url string, k, frames int, want func(k, i int) []byte, progress func(i int), release <-chan struct{}) (int, error) {
	c, _, err := websocket.Dial(ctx, strings.Replace(url, "http", "ws", 1), nil)
	if err != nil {
		return 0, fmt.Errorf("call %d: %v", k, err)
	}
	defer c.CloseNow()
	// total is the number of frames the call sends, stored before the
	// last of them is written, so that the reader knows the reply to it
	// is the last.
	var total atomic.Int64
	done := make(chan error, 1)
	go func() {
		for i := 0; total.Load() == 0 || int64(i) < total.Load(); i++ {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				done <- fmt.Errorf("call %d: reply %d: %v", k, i, err)
				return
			}
			if typ != websocket.MessageBinary {
				i--
				continue
			}
			if !bytes.Equal(msg, want(k, i)) {
				what := "neither version's output"
				switch {
				case bytes.Equal(msg, v1(k, i)):
					what = "version 1's output"
				case bytes.Equal(msg, v2(k, i)):
					what = "version 2's output"
				case msg[0] == stamp(k, i)[0] && msg[2] != stamp(k, i)[2]:
					what = "another frame"
				}
				done <- fmt.Errorf("call %d: reply %d is %s", k, i, what)
				return
			}
			if progress != nil {
				progress(i)
			}
		}
		done <- nil
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for last := false; !last; sent++ {
		if sent >= frames-1 {
			last = release == nil
			select {
			case <-release:
				last = true
			default:
			}
			if last {
				total.Store(int64(sent + 1))
			}
		}
		if err := c.Write(ctx, websocket.MessageBinary, stamp(k, sent)); err != nil {
			return sent, fmt.Errorf("call %d: frame %d: %v", k, sent, err)
		}
		<-tick.C
	}
	if err := <-done; err != nil {
		return sent, err
	}
	c.Close(websocket.StatusNormalClosure, "")
	return sent, nil
}

// newCall makes a short call on pipeline (the default if empty) and says
// whether it ran through want.
func (h *host) newCall(pipeline string, want func(k, i int) []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := h.url + "/ws"
	if pipeline != "" {
		url += "?pipeline=" + pipeline
	}
	_, err := call(ctx, url, 7000, 3, want, nil, nil)
	return err
}

// eventually retries check until it succeeds or 5 s pass.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: after 5 s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestVersionsDiffer(t *testing.T) {
	if bytes.Equal(v1(1, 1), v2(1, 1)) || bytes.Equal(v1(1, 1), stamp(1, 1)) {
		t.Fatal("the two test versions must be told apart by their output")
	}
}

// TestReplaceUnderLoad replaces the plugin of pipeline p while 100 calls
// stream through it: every call gets all its frames, in order, each
// processed by the version it started with; calls placed after the swap get
// the new version.
func TestReplaceUnderLoad(t *testing.T) {
	h := startHost(t, "")
	const calls, frames = 100, 100 // 2 s each at least
	old, next := wasm(t, "negate"), wasm(t, "halve")
	if got := h.pluginSHA("flip"); got != sha(old) {
		t.Fatalf("GET /plugins: flip sha256 %s, want %s", got, sha(old))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		wg      sync.WaitGroup
		errs    = make(chan error, calls)
		warm    sync.WaitGroup // every call has had 20 replies
		replies atomic.Int64
		sent    atomic.Int64
		// The old calls stream until the new call has been checked, so
		// that they are all under way when it runs, on a busy machine too
		// (where the swap can take longer than what was left of a
		// fixed-length call).
		release = make(chan struct{})
	)
	warm.Add(calls)
	for k := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			warmed := false
			n, err := call(ctx, h.url+"/ws", k, frames, v1, func(i int) {
				replies.Add(1)
				if i == 19 {
					warmed = true
					warm.Done()
				}
			}, release)
			if !warmed {
				warm.Done()
			}
			sent.Add(int64(n))
			errs <- err
		}()
	}
	warm.Wait()
	if n := h.h.Server.ActiveCalls(); n != calls {
		var why []error
		for len(why) < 3 {
			select {
			case err := <-errs:
				why = append(why, err)
				continue
			default:
			}
			break
		}
		t.Fatalf("%d active calls at the swap, want %d; %v\n%s", n, calls, why, h.log)
	}
	before := replies.Load()
	swapStart := time.Now()
	status, body := h.admin("PUT", "/plugins/flip", token, next)
	swap := time.Since(swapStart)
	if status != http.StatusOK {
		t.Fatalf("PUT /plugins/flip: %d %v", status, body)
	}
	if body["sha256"] != sha(next) || body["previous_sha256"] != sha(old) || fmt.Sprint(body["pipelines_reloaded"]) != "[p]" {
		t.Errorf("PUT answer: %v", body)
	}
	// A call placed now gets the new version, while the old calls go on.
	if err := h.newCall("", v2); err != nil {
		t.Errorf("new call after the swap: %v", err)
	}
	if h.h.Server.ActiveCalls() < calls {
		t.Errorf("the old calls ended early: %d active", h.h.Server.ActiveCalls())
	}
	close(release)
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if failed <= 5 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d calls lost, reordered or changed frames", failed, calls)
	}
	if got, want := replies.Load(), sent.Load(); got != want || want < calls*frames {
		t.Fatalf("%d replies to %d frames, want one to each of at least %d", got, want, calls*frames)
	}
	t.Logf("%d calls × %d frames or more: all in order through version 1; the swap took %v, with %d replies before and %d after it started",
		calls, frames, swap.Round(time.Millisecond), before, replies.Load()-before)

	if got := h.pluginSHA("flip"); got != sha(next) {
		t.Errorf("GET /plugins: flip sha256 %s, want the new %s", got, sha(next))
	}
	onDisk, err := os.ReadFile(filepath.Join(h.dir, "flip.wasm"))
	if err != nil || !bytes.Equal(onDisk, next) {
		t.Errorf("the upload is not flip.wasm in the plugin directory (err %v)", err)
	}
	// The watcher sees the upload's rename and finds the version current:
	// one reload, not two.
	time.Sleep(500 * time.Millisecond)
	if n := h.log.count(`msg="plugin reloaded"`, "name=flip", "sha256="+sha(next), "pipelines=p"); n != 1 {
		t.Errorf("%d 'plugin reloaded' lines, want 1:\n%s", n, h.log)
	}
	if got := h.metric(`voxhost_plugin_reloads_total{result="ok"}`); got != "1" {
		t.Errorf(`voxhost_plugin_reloads_total{result="ok"} = %q, want 1`, got)
	}
	// Uploading the same module again changes nothing.
	status, body = h.admin("PUT", "/plugins/flip", token, next)
	if status != http.StatusOK || body["unchanged"] != true {
		t.Errorf("same upload again: %d %v", status, body)
	}
}

// TestBadUploadKeepsTheOldVersion uploads modules that are not plugins, and
// one that no pipeline can use: each is refused with the reason, and the
// old version goes on serving new calls.
func TestBadUploadKeepsTheOldVersion(t *testing.T) {
	h := startHost(t, "")
	old := wasm(t, "negate")
	for _, tc := range []struct {
		name   string
		body   []byte
		status int
		reason string
	}{
		{"not wasm", []byte("#!/bin/sh\necho hello\n"), 400, `plugin flip.wasm: not a WebAssembly module (the file does not start with "\0asm") (the previous version stays)`},
		{"missing export", wasm(t, "no_process"), 400, "plugin flip.wasm: missing export vox_process"},
		{"refused by the pipeline", wasm(t, "picky"), 400, "pipeline p"},
		{"empty", nil, 400, "the request body is empty"},
	} {
		status, body := h.admin("PUT", "/plugins/flip", token, tc.body)
		if status != tc.status || !strings.Contains(fmt.Sprint(body["error"]), tc.reason) {
			t.Errorf("%s: %d %v, want %d and an error containing %q", tc.name, status, body, tc.status, tc.reason)
		}
		if err := h.newCall("", v1); err != nil {
			t.Errorf("%s: new call: %v", tc.name, err)
		}
		if got := h.pluginSHA("flip"); got != sha(old) {
			t.Errorf("%s: flip sha256 %s, want the old %s", tc.name, got, sha(old))
		}
	}
	if _, body := h.admin("PUT", "/plugins/flip", token, wasm(t, "no_process")); fmt.Sprint(body["problems"]) != "[missing export vox_process]" {
		t.Errorf("problems: %v", body["problems"])
	}
	onDisk, _ := os.ReadFile(filepath.Join(h.dir, "flip.wasm"))
	if !bytes.Equal(onDisk, old) {
		t.Error("a refused upload reached the plugin directory")
	}
	if n := h.log.count(`msg="plugin rejected"`, "name=flip", "kept_sha256="+sha(old)); n != 4 {
		t.Errorf("%d 'plugin rejected' lines, want 4:\n%s", n, h.log)
	}
	if got := h.metric(`voxhost_plugin_reloads_total{result="rejected"}`); got != "4" {
		t.Errorf(`voxhost_plugin_reloads_total{result="rejected"} = %q, want 4`, got)
	}
	// The last refusal is listed.
	_, body := h.admin("GET", "/plugins", token, nil)
	if rej := fmt.Sprint(body["rejected"]); !strings.Contains(rej, "missing export vox_process") {
		t.Errorf("rejected: %s", rej)
	}
	// Too big.
	big := make([]byte, 33<<20)
	copy(big, old)
	if status, body := h.admin("PUT", "/plugins/flip", token, big); status != http.StatusRequestEntityTooLarge {
		t.Errorf("33 MiB upload: %d %v", status, body)
	}
	// Names that pipelines could not reference.
	for _, name := range []string{"flip.wasm", ".hidden", "a%20b"} {
		if status, body := h.admin("PUT", "/plugins/"+name, token, old); status != http.StatusBadRequest {
			t.Errorf("PUT /plugins/%s: %d %v", name, status, body)
		}
	}
}

// TestDirectoryWatcher changes files in the plugin directory as an
// operator would: cp over the file, rename into place, a new file, garbage.
func TestDirectoryWatcher(t *testing.T) {
	h := startHost(t, "")
	flip := filepath.Join(h.dir, "flip.wasm")

	// Written in place, in two steps.
	next := wasm(t, "halve")
	if err := os.WriteFile(flip, next[:10], 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(flip, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(next[10:])
	f.Close()
	start := time.Now()
	eventually(t, "new calls get the new version", func() error { return h.newCall("", v2) })
	t.Logf("a file written in place reached new calls in %v", time.Since(start).Round(time.Millisecond))
	if got := h.pluginSHA("flip"); got != sha(next) {
		t.Errorf("flip sha256 %s, want %s", got, sha(next))
	}
	if n := h.log.count(`msg="plugin reloaded"`, "name=flip", "sha256="+sha(next), "pipelines=p", "via=plugins_dir"); n != 1 {
		t.Errorf("%d 'plugin reloaded' lines, want 1:\n%s", n, h.log)
	}

	// Garbage: rejected, logged, the old version stays.
	if err := os.WriteFile(flip, []byte("not a plugin"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the garbage is rejected", func() error {
		if h.log.count(`msg="plugin rejected"`, "name=flip", "not a WebAssembly module", "kept_sha256="+sha(next)) == 0 {
			return fmt.Errorf("no 'plugin rejected' line:\n%s", h.log)
		}
		return nil
	})
	if err := h.newCall("", v2); err != nil {
		t.Errorf("after the garbage: %v", err)
	}

	// Renamed into place: the way to replace a file atomically.
	tmp := filepath.Join(h.dir, ".flip.wasm.tmp")
	if err := os.WriteFile(tmp, wasm(t, "negate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, flip); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the renamed file reaches new calls", func() error { return h.newCall("", v1) })

	// A new file is validated and listed, used by no pipeline yet.
	if err := os.WriteFile(filepath.Join(h.dir, "extra.wasm"), next, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "extra is listed", func() error {
		if h.pluginSHA("extra") != sha(next) {
			return fmt.Errorf("not listed")
		}
		return nil
	})
	// Removing an unused plugin's file removes it; a used one's is kept.
	os.Remove(filepath.Join(h.dir, "extra.wasm"))
	eventually(t, "extra is gone", func() error {
		if h.pluginSHA("extra") != "" {
			return fmt.Errorf("still listed")
		}
		return nil
	})
	os.Remove(flip)
	eventually(t, "a warning for flip", func() error {
		if h.log.count("plugin file removed", "name=flip") == 0 {
			return fmt.Errorf("no warning")
		}
		return nil
	})
	if err := h.newCall("", v1); err != nil {
		t.Errorf("after flip.wasm was removed: %v", err)
	}
}

func TestAuthAndDelete(t *testing.T) {
	h := startHost(t, "")
	for _, tok := range []string{"", "wrong"} {
		for _, r := range [][2]string{{"GET", "/plugins"}, {"PUT", "/plugins/flip"}, {"DELETE", "/plugins/flip"}, {"POST", "/reload"}, {"GET", "/pipelines"}} {
			status, body := h.admin(r[0], r[1], tok, wasm(t, "halve"))
			if status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(body["error"]), "admin token") {
				t.Errorf("%s %s with token %q: %d %v", r[0], r[1], tok, status, body)
			}
		}
	}
	if err := h.newCall("", v1); err != nil {
		t.Errorf("after refused requests: %v", err)
	}
	// The admin API is not on the call listener.
	if resp, err := http.Get(h.url + "/plugins"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /plugins on the call listener: %v %v", resp, err)
	}

	status, body := h.admin("DELETE", "/plugins/flip", token, nil)
	if status != http.StatusConflict || fmt.Sprint(body["used_by"]) != "[p]" || !strings.Contains(fmt.Sprint(body["error"]), "used by pipeline p") {
		t.Errorf("DELETE a used plugin: %d %v", status, body)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "flip.wasm")); err != nil {
		t.Errorf("the refused delete removed the file: %v", err)
	}
	// An unused upload can go.
	if status, body := h.admin("PUT", "/plugins/spare", token, wasm(t, "halve")); status != http.StatusCreated || fmt.Sprint(body["used_by"]) != "[]" {
		t.Fatalf("PUT /plugins/spare: %d %v", status, body)
	}
	if status, body := h.admin("DELETE", "/plugins/spare", token, nil); status != http.StatusOK {
		t.Errorf("DELETE an unused plugin: %d %v", status, body)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "spare.wasm")); !os.IsNotExist(err) {
		t.Errorf("spare.wasm is still there: %v", err)
	}
	if status, body := h.admin("DELETE", "/plugins/spare", token, nil); status != http.StatusNotFound {
		t.Errorf("DELETE it again: %d %v", status, body)
	}
	if status, body := h.admin("DELETE", "/plugins/gain", token, nil); status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), "stock plugin") {
		t.Errorf("DELETE a stock plugin: %d %v", status, body)
	}
	if status, _ := h.admin("GET", "/nothing", token, nil); status != http.StatusNotFound {
		t.Errorf("GET /nothing: %d", status)
	}
}

func TestReloadPipelines(t *testing.T) {
	h := startHost(t, "")
	// A second pipeline reaches new calls; the first is not rebuilt.
	extra := "  q:\n    - plugin: gain\n      config: {db: 0}\n    - plugin: flip\n"
	if err := os.WriteFile(h.config, []byte(configYAML(h.dir, extra)+"  # edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status, body := h.admin("POST", "/reload", token, nil)
	if status != http.StatusOK || fmt.Sprint(body["added"]) != "[q]" || fmt.Sprint(body["pipelines"]) != "[p q]" || fmt.Sprint(body["rebuilt"]) != "[]" {
		t.Fatalf("POST /reload: %d %v", status, body)
	}
	if err := h.newCall("q", v1); err != nil {
		t.Errorf("a call on the new pipeline: %v", err)
	}
	if err := h.newCall("p", v1); err != nil {
		t.Errorf("a call on the old pipeline: %v", err)
	}

	// A broken file: 400 with file:line:col, and nothing changes.
	broken := configYAML(h.dir, extra) + "  r:\n    - plugin: gain\n      onerror: bypass\n"
	if err := os.WriteFile(h.config, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	status, body = h.admin("POST", "/reload", token, nil)
	line := strings.Count(broken, "\n") // the last line
	wantPrefix := fmt.Sprintf("%s:%d:7: pipelines.r[0]: unknown key \"onerror\"", h.config, line)
	if status != http.StatusBadRequest || !strings.HasPrefix(fmt.Sprint(body["error"]), wantPrefix) {
		t.Errorf("broken config: %d %v\nwant an error starting %q", status, body, wantPrefix)
	}
	// A pipeline with an unknown plugin: 400 naming it.
	if err := os.WriteFile(h.config, []byte(configYAML(h.dir, "  r:\n    - plugin: reverb\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	status, body = h.admin("POST", "/reload", token, nil)
	if status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(body["error"]), `unknown plugin "reverb"`) {
		t.Errorf("unknown plugin: %d %v", status, body)
	}
	_, body = h.admin("GET", "/pipelines", token, nil)
	if names := regexp.MustCompile(`name:(\w+)`).FindAllString(fmt.Sprint(body["pipelines"]), -1); fmt.Sprint(names) != "[name:p name:q]" {
		t.Errorf("after refused reloads, pipelines %v, want p and q", names)
	}
	if err := h.newCall("q", v1); err != nil {
		t.Errorf("q after refused reloads: %v", err)
	}

	// Restart-only settings are reported, pipelines still apply; removing q
	// removes it for new calls.
	changed := strings.Replace(configYAML(h.dir, ""), "max_calls: 500", "max_calls: 400", 1)
	if err := os.WriteFile(h.config, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	status, body = h.admin("POST", "/reload", token, nil)
	if status != http.StatusOK || fmt.Sprint(body["removed"]) != "[q]" || fmt.Sprint(body["restart_required"]) != "[limits]" {
		t.Errorf("reload with a limits change: %d %v", status, body)
	}
	if err := h.newCall("q", v1); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a call on the removed pipeline: %v", err)
	}
	if ok, rej := h.metric(`voxhost_pipeline_reloads_total{result="ok"}`), h.metric(`voxhost_pipeline_reloads_total{result="rejected"}`); ok != "2" || rej != "2" {
		t.Errorf("pipeline reloads: ok %s, rejected %s; want 2 and 2", ok, rej)
	}
}

func TestProfilesNeedTheAdminToken(t *testing.T) {
	hs := httptest.NewServer(admin.NewHandler(admin.HandlerOptions{Tokens: []string{"adm"}}))
	defer hs.Close()
	for tok, want := range map[string]int{"": http.StatusUnauthorized, "adm": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+"/debug/pprof/goroutine?debug=1", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("token %q: %d, want %d", tok, resp.StatusCode, want)
		}
		if want == http.StatusOK && !strings.Contains(string(body), "goroutine profile") {
			t.Fatalf("not a goroutine profile: %.80s", body)
		}
	}
}

// TestSlowLoadHoldsUpNoOtherChange: loading a module (compiling it and
// running its trial set-up) holds no lock that other uploads need, so a
// module whose vox_init takes a second does not hold up the upload of
// another plugin made meanwhile.
func TestSlowLoadHoldsUpNoOtherChange(t *testing.T) {
	h := startHost(t, "plugin_limits:\n  init_budget: 10s\n")
	slowDone := make(chan time.Time, 1)
	go func() {
		status, body := h.admin("PUT", "/plugins/slow", token, wasm(t, "slow_init"))
		if status != http.StatusCreated {
			t.Errorf("PUT /plugins/slow: %d %v", status, body)
		}
		slowDone <- time.Now()
	}()
	time.Sleep(200 * time.Millisecond) // the slow module is loading
	status, body := h.admin("PUT", "/plugins/quick", token, wasm(t, "halve"))
	quickDone := time.Now()
	if status != http.StatusCreated {
		t.Fatalf("PUT /plugins/quick: %d %v", status, body)
	}
	slow := <-slowDone
	if !quickDone.Before(slow) {
		t.Fatalf("the quick upload finished %v after the slow one: it waited for it", quickDone.Sub(slow))
	}
	t.Logf("the quick upload finished %v before the slow one", slow.Sub(quickDone))
}
