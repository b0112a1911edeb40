package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/internal/admin"
	"github.com/voxhost/voxhost/internal/signal"
)

// openTap asks for GET url with tok until the call's stream has started
// (404 before), and returns the open answer.
func openTap(t *testing.T, url, tok string) *http.Response {
	t.Helper()
	var resp *http.Response
	eventually(t, "the tap opens", func() error {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		if r.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(r.Body)
			r.Body.Close()
			return fmt.Errorf("%d %s", r.StatusCode, body)
		}
		resp = r
		return nil
	})
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// tapStatus is the status of GET url with tok, and its error.
func tapStatus(t *testing.T, url, tok string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var e struct{ Error string }
	_ = json.NewDecoder(r.Body).Decode(&e)
	return r.StatusCode, e.Error
}

// TestTapOfALiveCall places a call on an echo route through aec and reads
// GET /calls/{id}/tap while it runs: the header line says what the streams
// are, and each record is a frame as the call ran it: the μ-law the call
// sent (decoded), aec's output (which, μ-law coded, is what the call got
// back) and the far-end reference aec got with it, the route's output one
// frame late (an echo's far end, ABI §11). The feed ends with the call.
// The admin API taps any call, the console API only the console's; the
// fifth viewer of one call is refused until one goes away.
func TestTapOfALiveCall(t *testing.T) {
	h := startHost(t, fmt.Sprintf(`  canceller:
    inbound:
      - plugin: aec
        budget_ms: 100
console: true
auth:
  tokens: [%q]
`, callToken))
	id := admin.ConsoleCallPrefix + "tap"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, strings.Replace(h.url, "http", "ws", 1)+"/ws?pipeline=canceller&call_id="+id,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + callToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	tapPath := "/calls/" + id + "/tap"
	if status, _ := tapStatus(t, h.adminURL+tapPath, "wrong"); status != http.StatusUnauthorized {
		t.Fatalf("without the admin token: %d, want 401", status)
	}
	resp := openTap(t, h.adminURL+tapPath, token)
	if ct := resp.Header.Get("Content-Type"); ct != admin.TapContentType {
		t.Fatalf("Content-Type %q", ct)
	}
	body := bufio.NewReader(resp.Body)
	line, err := body.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var hdr admin.TapHeader
	if err := json.Unmarshal(line, &hdr); err != nil {
		t.Fatalf("the first line %q: %v", line, err)
	}
	if want := (admin.TapHeader{TapInfo: server.TapInfo{CallID: id, CallerRate: 8000, ProcessedRate: 8000, Reference: true}, RecordHeader: 12}); hdr != want {
		t.Fatalf("the header line says %+v, want %+v", hdr, want)
	}

	// The console API taps the console's call, not another; the fifth
	// viewer is refused.
	consoleTap := h.url + "/console/api" + tapPath
	var viewers []*http.Response
	for i := 0; i < 3; i++ {
		viewers = append(viewers, openTap(t, consoleTap, callToken))
	}
	if status, msg := tapStatus(t, consoleTap, callToken); status != http.StatusTooManyRequests || !strings.Contains(msg, "viewers") {
		t.Fatalf("a fifth viewer: %d %q, want 429", status, msg)
	}
	// A viewer that goes away gives its place back.
	viewers[0].Body.Close()
	openTap(t, consoleTap, callToken)
	if status, _ := tapStatus(t, h.url+"/console/api/calls/carrier-1/tap", callToken); status != http.StatusNotFound {
		t.Fatalf("the console API tapping another call: %d, want 404", status)
	}
	if status, msg := tapStatus(t, h.adminURL+"/calls/nobody/tap", token); status != http.StatusNotFound || !strings.Contains(msg, "no live call") {
		t.Fatalf("tapping no call: %d %q, want 404", status, msg)
	}

	const frames = 40
	pcm := signal.Speech(8000, frames*0.02)
	sent := make([]byte, len(pcm)/2)
	codec.EncodeUlaw(sent, pcm)
	var received []byte
	for off := 0; off < len(sent); off += 160 {
		if err := c.Write(ctx, websocket.MessageBinary, sent[off:off+160]); err != nil {
			t.Fatal(err)
		}
		_, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		received = append(received, msg...)
	}
	c.Close(websocket.StatusNormalClosure, "")

	le := binary.LittleEndian
	prev := make([]byte, 320)
	for k := 0; k < frames; k++ {
		var rh [admin.TapRecordHeader]byte
		if _, err := io.ReadFull(body, rh[:]); err != nil {
			t.Fatalf("record %d: %v", k, err)
		}
		at, lost := le.Uint32(rh[:]), le.Uint16(rh[4:])
		n := [3]int{int(le.Uint16(rh[6:])), int(le.Uint16(rh[8:])), int(le.Uint16(rh[10:]))}
		if at != uint32(20*k) || lost != 0 || n != [3]int{160, 160, 160} {
			t.Fatalf("record %d: at %d ms, %d lost, %v samples; want at %d ms, none lost, 160 of each stream", k, at, lost, n, 20*k)
		}
		samples := make([]byte, 2*(n[0]+n[1]+n[2]))
		if _, err := io.ReadFull(body, samples); err != nil {
			t.Fatal(err)
		}
		caller, ref, out := samples[:320], samples[320:640], samples[640:]
		if want := pcmOfUlaw(sent[160*k : 160*(k+1)]); !bytes.Equal(caller, want) {
			t.Fatalf("record %d: the caller's audio is not the μ-law sent, decoded", k)
		}
		coded := make([]byte, 160)
		codec.EncodeUlaw(coded, out)
		if !bytes.Equal(coded, received[160*k:160*(k+1)]) {
			t.Fatalf("record %d: aec's output, μ-law coded, is not what the call got back", k)
		}
		if !bytes.Equal(ref, prev) {
			t.Fatalf("record %d: the reference is not the route's output of the frame before", k)
		}
		prev = out
	}
	if rest, err := io.ReadAll(body); err != nil && !errors.Is(err, io.EOF) || len(rest) != 0 {
		t.Fatalf("after the call's %d frames the feed holds %d more bytes (%v); want its end", frames, len(rest), err)
	}
}

// pcmOfUlaw decodes μ-law by the G.711 formula, independently of
// host/codec's tables.
func pcmOfUlaw(ulaw []byte) []byte {
	out := make([]byte, 2*len(ulaw))
	for i, u := range ulaw {
		u = ^u
		v := (int(u&0x0F)<<3 + 0x84) << ((u >> 4) & 7)
		s := int16(v - 0x84)
		if u&0x80 != 0 {
			s = int16(0x84 - v)
		}
		binary.LittleEndian.PutUint16(out[2*i:], uint16(s))
	}
	return out
}
