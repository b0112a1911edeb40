package sip_test

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/sip"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// baresip is a baresip user agent (Debian's baresip-core) a test drives:
// its cons module takes key presses and commands as the keyboard would
// ("x" holds the call, "X" resumes it, "/dial URI" and "/hangup"), and
// its ctrl_tcp module reports its events (CALL_ESTABLISHED, CALL_CLOSED,
// CALL_DTMF_START …). It speaks a tone file through the aufile module and
// plays what it hears to aubridge, which needs no sound card.
type baresip struct {
	t    *testing.T
	cons net.Conn
	log  *hosttest.LogBuffer

	mu     sync.Mutex
	events []baresipEvent
}

// baresipEvent is one event ctrl_tcp reports.
type baresipEvent struct {
	Type  string `json:"type"`
	Param string `json:"param"`
}

func (e baresipEvent) String() string { return e.Type + " " + e.Param }

// baresipModules are the modules the tests load: G.711, the tone file,
// the silent player, the console and control sockets, the accounts file's
// reader and the menu that defines the commands.
var baresipModules = []string{"module g711.so", "module aufile.so", "module aubridge.so", "module cons.so",
	"module_tmp account.so", "module_app menu.so", "module_app ctrl_tcp.so"}

// startBaresip runs baresip, without registering, on loopback ports of
// its own, until the test ends.
func startBaresip(t *testing.T) *baresip {
	t.Helper()
	bin := requireTool(t, "baresip")
	dir := t.TempDir()
	tone := filepath.Join(dir, "tone.wav")
	// aufile ends the call at the end of its file: longer than any test.
	writeToneWAV(t, tone, 2*time.Minute)
	sipPort, consPort, ctrlPort := freeTCPPort(t), freeTCPPort(t), freeTCPPort(t)
	rtp := freeUDPPort(t)
	config := strings.Join(append([]string{
		"poll_method epoll",
		"net_interface 127.0.0.1", // SDP and Contact on loopback, not the default route's address
		fmt.Sprintf("sip_listen 127.0.0.1:%d", sipPort),
		"audio_player aubridge,nil",
		"audio_alert aubridge,nil",
		"audio_source aufile," + tone,
		fmt.Sprintf("rtp_ports %d-%d", rtp, rtp+3),
		"module_path /usr/lib/baresip/modules",
		fmt.Sprintf("cons_listen 127.0.0.1:%d", consPort),
		fmt.Sprintf("ctrl_tcp_listen 127.0.0.1:%d", ctrlPort),
	}, baresipModules...), "\n") + "\n"
	for name, text := range map[string]string{"config": config, "accounts": "<sip:baresip@127.0.0.1>;regint=0\n", "contacts": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := &baresip{t: t, log: &hosttest.LogBuffer{}}
	cmd := exec.Command(bin, "-f", dir)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("baresip's output:\n%s", b.log.String())
		}
	})
	ctrl := dialWhenUp(t, ctrlPort, exited, b)
	b.cons = dialWhenUp(t, consPort, exited, b)
	t.Cleanup(func() {
		ctrl.Close()
		b.cons.Close()
	})
	go b.readEvents(ctrl)
	return b
}

// dialWhenUp connects to baresip's port once it listens: it starts in
// its own time.
func dialWhenUp(t *testing.T, port int, exited <-chan struct{}, b *baresip) net.Conn {
	t.Helper()
	var conn net.Conn
	sip.WaitFor(t, fmt.Sprintf("baresip to listen on %d", port), func() bool {
		select {
		case <-exited:
			t.Fatalf("baresip exited:\n%s", b.log.String())
		default:
		}
		var err error
		conn, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		return err == nil
	})
	return conn
}

// readEvents reads ctrl_tcp's netstrings ("len:json,") and keeps the
// events among them.
func (b *baresip) readEvents(conn net.Conn) {
	r := bufio.NewReader(conn)
	for {
		head, err := r.ReadString(':')
		if err != nil {
			return
		}
		var n int
		if _, err := fmt.Sscan(head[:len(head)-1], &n); err != nil || n < 0 || n > 1<<20 {
			return
		}
		msg := make([]byte, n+1) // and the comma
		if _, err := io.ReadFull(r, msg); err != nil {
			return
		}
		var ev struct {
			Event bool `json:"event"`
			baresipEvent
		}
		if json.Unmarshal(msg[:n], &ev) == nil && ev.Event {
			b.mu.Lock()
			b.events = append(b.events, ev.baresipEvent)
			b.mu.Unlock()
		}
	}
}

// send types keys (or a command ending in a newline) on the console.
func (b *baresip) send(keys string) {
	b.t.Helper()
	if _, err := b.cons.Write([]byte(keys)); err != nil {
		b.t.Fatal(err)
	}
}

// waitEvent waits for an event of typ and returns it.
func (b *baresip) waitEvent(typ string) baresipEvent {
	b.t.Helper()
	var found baresipEvent
	sip.WaitFor(b.t, "baresip's "+typ, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.events {
			if e.Type == typ {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// seen lists the events so far, for a failure's message.
func (b *baresip) seen() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s []string
	for _, e := range b.events {
		s = append(s, e.String())
	}
	return strings.Join(s, "; ")
}

// dial calls route at the host.
func (b *baresip) dial(h *host, route string) {
	b.send(fmt.Sprintf("/dial sip:%s@%s\n", route, h.sip))
}

// writeToneWAV writes d of a 440 Hz tone at -12 dBFS, 8 kHz mono PCM16.
func writeToneWAV(t *testing.T, path string, d time.Duration) {
	n := int(d.Seconds() * 8000)
	data := make([]byte, 44+2*n)
	copy(data, "RIFF")
	binary.LittleEndian.PutUint32(data[4:], uint32(36+2*n))
	copy(data[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(data[16:], 16)
	binary.LittleEndian.PutUint16(data[20:], 1) // PCM
	binary.LittleEndian.PutUint16(data[22:], 1) // mono
	binary.LittleEndian.PutUint32(data[24:], 8000)
	binary.LittleEndian.PutUint32(data[28:], 16000)
	binary.LittleEndian.PutUint16(data[32:], 2)
	binary.LittleEndian.PutUint16(data[34:], 16)
	copy(data[36:], "data")
	binary.LittleEndian.PutUint32(data[40:], uint32(2*n))
	for i := range n {
		v := int16(8192 * math.Sin(2*math.Pi*440*float64(i)/8000))
		binary.LittleEndian.PutUint16(data[44+2*i:], uint16(v))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// adminToken is the admin API's token in the baresip tests' hosts.
const adminToken = "baresip-test-admin"

// liveMedia is what the admin API's GET /calls says of the one live SIP
// call's media, or nil while there is none.
func (h *host) liveMedia(t *testing.T) *server.MediaStats {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+h.h.AdminAddr().String()+"/calls", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Calls []server.CallSummary `json:"calls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Calls {
		if c.Protocol == "sip" && c.Media != nil {
			return c.Media
		}
	}
	return nil
}

// baresipAdmin is the admin listener of the baresip tests' hosts.
const baresipAdmin = `
admin:
  listen: 127.0.0.1:0
  tokens: [` + adminToken + `]
`

// TestBaresipHoldResumeHangUp: baresip calls an echo route, holds the
// call (its re-INVITE a=sendonly), holds it past the media and idle
// timeouts, resumes it and hangs up; the host's admin API shows the call
// held and live again, and counts it completed.
func TestBaresipHoldResumeHangUp(t *testing.T) {
	h := sipHost(t, "  media_timeout: 1s\n", baresipAdmin+`
limits:
  idle_timeout: 1s
`+passthroughEcho)
	b := startBaresip(t)
	b.dial(h, "echo")
	b.waitEvent("CALL_ESTABLISHED")
	sip.WaitFor(t, "the host to hear baresip", func() bool { m := h.liveMedia(t); return m != nil && m.Packets > 0 && !m.Held })
	b.send("x")
	sip.WaitFor(t, "the host to see the call held", func() bool { m := h.liveMedia(t); return m != nil && m.Held })
	// Held for longer than the media and idle timeouts: a held call is
	// not idle. The sleep is the hold under test, not a wait for
	// something: a slower box only holds the call longer.
	time.Sleep(2500 * time.Millisecond)
	if m := h.liveMedia(t); m == nil || !m.Held {
		t.Fatalf("the held call did not outlast the timeouts (%+v); baresip saw: %s", m, b.seen())
	}
	b.send("X")
	sip.WaitFor(t, "the host to see the call resumed", func() bool { m := h.liveMedia(t); return m != nil && !m.Held })
	b.send("/hangup\n")
	b.waitEvent("CALL_CLOSED")
	sip.WaitFor(t, "the host to count the call completed", func() bool {
		return h.metric(t, `voxhost_calls_total{outcome="completed",protocol="sip"}`) == 1
	})
	if n := h.metric(t, `voxhost_sip_requests_total{method="INVITE"}`); n < 3 {
		t.Fatalf("%v INVITEs: want the call's, the hold's and the resume's", n)
	}
	t.Logf("baresip: %s", b.seen())
}

// TestBaresipHearsTheBotsKeyAndItsHangUp: baresip calls a relay route
// whose bot speaks, presses 7, speaks 600 ms more and hangs up: baresip
// reports the telephone-event as the key 7, its end, then the host's BYE.
// (With the BYE 100 ms after the key's end, baresip tears the call down
// before its own jitter buffer hands it the end: what the host sent is
// TestMediaFinishesAKeyAtHangUp's to check.)
func TestBaresipHearsTheBotsKeyAndItsHangUp(t *testing.T) {
	h := keyHost(t, 10, 30, "7", true)
	b := startBaresip(t)
	b.dial(h, "keys")
	b.waitEvent("CALL_ESTABLISHED")
	if key := b.waitEvent("CALL_DTMF_START"); key.Param != "7" {
		t.Fatalf("baresip heard the key %q, want 7; it saw: %s", key.Param, b.seen())
	}
	b.waitEvent("CALL_DTMF_END")
	b.waitEvent("CALL_CLOSED")
	if ev := b.seen(); strings.Index(ev, "CALL_DTMF_END") > strings.Index(ev, "CALL_CLOSED") {
		t.Fatalf("the BYE came before the key's end: %s", ev)
	}
	sip.WaitFor(t, "the host to count the bot's hang-up", func() bool {
		return h.metric(t, `voxhost_calls_total{outcome="bot_hangup",protocol="sip"}`) == 1
	})
	t.Logf("baresip: %s", b.seen())
}

// TestBaresipCancel: baresip hangs up while the host rings: its CANCEL
// is answered 487, and the call slot comes back.
func TestBaresipCancel(t *testing.T) {
	h := ringingHost(t)
	b := startBaresip(t)
	b.dial(h, "echo")
	b.waitEvent("CALL_RINGING")
	b.send("/hangup\n")
	b.waitEvent("CALL_CLOSED")
	h.waitCancelled(t)
	t.Logf("baresip: %s", b.seen())
}
