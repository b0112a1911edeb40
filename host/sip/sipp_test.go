package sip_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/sip"
	"github.com/voxhost/voxhost/internal/app"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// The recordings Debian's sip-tester ships.
const (
	speechPcap = "/usr/share/sip-tester/g711a.pcap"
	digitPcap  = "/usr/share/sip-tester/dtmf_2833_1.pcap"
)

// requireTool finds a SIP tool, or skips the test without it — unless
// VOXHOST_SIP_TOOLS_REQUIRED is set (make test sets it, after make
// toolchains installed them), where a missing tool fails it.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("VOXHOST_SIP_TOOLS_REQUIRED") != "" {
			t.Fatalf("%s is not installed (make toolchains installs it): %v", name, err)
		}
		t.Skipf("%s is not installed (make toolchains installs it)", name)
	}
	return p
}

// host is a voxhost serving SIP from a config file's text.
type host struct {
	h    *app.Host
	sip  netip.AddrPort
	http string
	logs *hosttest.LogBuffer
}

// rtpBase spreads the RTP ranges of the tests of one run apart.
var rtpBase = 30000 + 2*(os.Getpid()%500)*10

func startHost(t *testing.T, yaml string) *host {
	t.Helper()
	yaml = strings.ReplaceAll(yaml, "RTP_MIN", fmt.Sprint(rtpBase))
	yaml = strings.ReplaceAll(yaml, "RTP_MAX", fmt.Sprint(rtpBase+19))
	rtpBase += 20
	cfg, err := config.Parse("voxhost.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Apply(&cfg, app.Overrides{Addr: "127.0.0.1:0", CacheDir: "-"}); err != nil {
		t.Fatal(err)
	}
	logs := &hosttest.LogBuffer{}
	ctx, stop := context.WithCancel(context.Background())
	h, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- h.ListenAndServe(ctx, func(a net.Addr) { addrc <- a }) }()
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("host did not start: %v", err)
	}
	t.Cleanup(func() {
		stop()
		<-done
		h.Close(context.Background())
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	return &host{h: h, sip: h.SIPAddr(), http: addr.String(), logs: logs}
}

// passthroughEcho is a config's routes: echo, which passes the audio
// through.
const passthroughEcho = `
pipelines:
  echo: [{plugin: passthrough}]
`

// sipHost starts a host whose sip section is the tests' own (SIP on a
// loopback port, an RTP range of the test's, loopback as the one trunk)
// with sipKeys added to it, each indented two spaces, and rest (routes,
// limits) after it.
func sipHost(t *testing.T, sipKeys, rest string) *host {
	t.Helper()
	return startHost(t, `
sip:
  listen: 127.0.0.1:0
  rtp_port_min: RTP_MIN
  rtp_port_max: RTP_MAX
  trunks:
    local: {sources: ["127.0.0.1"]}
`+sipKeys+rest)
}

// completeCall runs a SIPp scenario that calls route and waits for the
// host to count the call completed.
func (h *host) completeCall(t *testing.T, scenario, route string, args ...string) {
	t.Helper()
	h.sipp(t, scenario, append([]string{"-key", "route", route}, args...)...)
	sip.WaitFor(t, "the call to end", func() bool {
		return h.metric(t, `voxhost_calls_total{outcome="completed",protocol="sip"}`) == 1
	})
}

// metric reads one sample of the host's /metrics, 0 if absent.
func (h *host) metric(t *testing.T, line string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + h.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(l, line+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return 0
}

// sipp runs a SIPp scenario against the host and returns its output; it
// fails the test if SIPp reports a failed call.
func (h *host) sipp(t *testing.T, scenario string, args ...string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", "sipp", scenario))
	if err != nil {
		t.Fatal(err)
	}
	return h.sippAs(t, "127.0.0.1", abs, args...)
}

// sippAs runs the scenario file from the address ip.
func (h *host) sippAs(t *testing.T, ip, scenario string, args ...string) string {
	t.Helper()
	bin := requireTool(t, "sipp")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	media := freeUDPPort(t)
	dir := t.TempDir()
	all := append([]string{"-sf", scenario, "-m", "1", "-i", ip, "-p", "0",
		"-mp", fmt.Sprint(media), "-nostdin", "-trace_err", "-trace_msg", "-timeout", "90s", "-timeout_error"}, args...)
	all = append(all, h.sip.String())
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		var b strings.Builder
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(l), data)
		}
		t.Fatalf("sipp %s: %v\n%s\n%s", scenario, err, tail(string(out), 2000), b.String())
	}
	return string(out)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	for range 100 {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		// SIPp takes the pair (RTP and RTCP) and, with -mp, the port
		// after them for its pcap player.
		if p%2 == 0 && p < 65000 {
			return p
		}
	}
	t.Fatal("no free even UDP port")
	return 0
}

// pcapPayloads reads the RTP payloads of a pcap's packets, in order.
func pcapPayloads(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 24 || binary.LittleEndian.Uint32(data) != 0xa1b2c3d4 || binary.LittleEndian.Uint32(data[20:]) != 1 {
		t.Fatalf("%s: not a little-endian Ethernet pcap", path)
	}
	var out [][]byte
	for off := 24; off+16 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off+8:]))
		pkt := data[off+16 : off+16+n]
		off += 16 + n
		ihl := int(pkt[14]&0x0f) * 4
		rtp := pkt[14+ihl+8:]
		cc := int(rtp[0] & 0x0f)
		out = append(out, rtp[12+4*cc:])
	}
	return out
}

// bot is a voice bot on the raw dialect: it records what the host sends.
type bot struct {
	srv *httptest.Server

	mu     sync.Mutex
	frames [][]byte
	digits []string
	start  map[string]any
	path   string
	ended  bool
}

func newBot(t *testing.T) *bot {
	b := &bot{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		b.mu.Lock()
		b.path = r.URL.Path
		b.mu.Unlock()
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(context.Background())
			if err != nil {
				b.mu.Lock()
				b.ended = true
				b.mu.Unlock()
				return
			}
			b.mu.Lock()
			if typ == websocket.MessageBinary {
				b.frames = append(b.frames, msg)
			} else {
				var ev map[string]any
				_ = json.Unmarshal(msg, &ev)
				switch ev["event"] {
				case "start":
					b.start = ev
				case "dtmf":
					b.digits = append(b.digits, fmt.Sprint(ev["digit"]))
				}
			}
			b.mu.Unlock()
		}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bot) url() string {
	return "ws" + strings.TrimPrefix(b.srv.URL, "http") + "/{param.customer_id}"
}

func (b *bot) done() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended
}

// TestSIPpEchoCall places a SIPp call that plays SIPp's A-law speech and a
// digit through an echo route: the call is answered, the host sends back
// as many packets as it got, and the call ends by the caller's BYE.
func TestSIPpEchoCall(t *testing.T) {
	h := sipHost(t, "", `
pipelines:
  echo: [{plugin: gain, config: {db: -6}}]
`)
	h.completeCall(t, "uac_pcap.xml", "echo")
	in, out := h.metric(t, `voxhost_rtp_packets_total{direction="in"}`), h.metric(t, `voxhost_rtp_packets_total{direction="out"}`)
	speech := len(pcapPayloads(t, speechPcap))
	if in < float64(speech) || out < float64(speech) {
		t.Fatalf("RTP in %v, out %v; the recording has %d packets", in, out, speech)
	}
	if d := h.metric(t, `voxhost_rtp_dtmf_total{direction="in"}`); d != 1 {
		t.Fatalf("%v digits received, want the recording's 1", d)
	}
	if got := h.metric(t, `voxhost_sip_invite_responses_total{code="200"}`); got != 1 {
		t.Fatalf("%v INVITEs answered 200", got)
	}
}

// TestSIPpRelayToBot places a SIPp call through a route that relays to a
// bot: the bot gets every frame of SIPp's recording, as the route's
// pipeline makes it offline, the digit, and the call's custom header as a
// parameter (in its URL and its start event).
func TestSIPpRelayToBot(t *testing.T) {
	b := newBot(t)
	h := sipHost(t, "", fmt.Sprintf(`
pipelines:
  relay:
    inbound: [{plugin: gain, config: {db: -6}}]
    upstream: {url: %q, protocol: raw}
`, b.url()))
	h.sipp(t, "uac_pcap.xml", "-key", "route", "relay")
	sip.WaitFor(t, "the bot's call to end", b.done)

	// What the bot must hear: the recording's A-law, decoded, through the
	// route's pipeline run offline, in the bot leg's μ-law.
	var alaw []byte
	payloads := pcapPayloads(t, speechPcap)
	for _, p := range payloads {
		alaw = append(alaw, p...)
	}
	pcm := make([]byte, 2*len(alaw))
	codec.DecodeAlaw(pcm, alaw)
	want := hosttest.OfflinePCM(t, "gain db=-6", pcm, 8000)
	ulaw := make([]byte, len(want)/2)
	codec.EncodeUlaw(ulaw, want)

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.start == nil {
		t.Fatal("the bot got no start event")
	}
	if params, _ := b.start["params"].(map[string]any); params["customer_id"] != "42" || params["sip_from"] != "sipp" {
		t.Fatalf("start params = %v, want customer_id 42 (X-Customer-Id) and sip_from sipp", b.start["params"])
	}
	if b.path != "/42" {
		t.Fatalf("the bot was dialled at %q, want /42 ({param.customer_id} of X-Customer-Id)", b.path)
	}
	if fmt.Sprint(b.digits) != "[1]" {
		t.Fatalf("the bot got digits %v, want [1]", b.digits)
	}
	// Every frame of the recording, in order; between them the host may
	// have played a concealment or silence frame (a packet late on a busy
	// machine, the pause before the digit), never other audio, and it may
	// have left out only the frames its jitter buffer reports draining.
	frame := len(payloads[0])
	next, extra, skipped := 0, 0, 0
	for _, f := range b.frames {
		found := -1
		for k := next; k < min(next+8, len(payloads)); k++ {
			if bytes.Equal(f, ulaw[k*frame:(k+1)*frame]) {
				found = k
				break
			}
		}
		if found < 0 {
			extra++
			continue
		}
		skipped += found - next
		next = found + 1
	}
	skipped += len(payloads) - next
	if drained := int(h.metric(t, "voxhost_rtp_drained_frames_total")); skipped > drained {
		t.Fatalf("the bot missed %d of the recording's %d frames, and the jitter buffer drained %d (%d other frames)", skipped, len(payloads), drained, extra)
	}
	t.Logf("bot heard %d of the %d frames of %s through the pipeline (%d drained), %d frames of concealment or silence, digits %v", len(payloads)-skipped, len(payloads), filepath.Base(speechPcap), skipped, extra, b.digits)
}

// TestSIPpHold holds the call by re-INVITE (a=sendonly, answered
// recvonly) for longer than the media timeout: a held call sends no RTP
// and is not idle. Resumed (a=sendrecv), the caller hangs up. Over UDP
// and over TCP.
func TestSIPpHold(t *testing.T) {
	for _, transport := range []string{"u1", "t1"} {
		t.Run(map[string]string{"u1": "udp", "t1": "tcp"}[transport], func(t *testing.T) { testSIPpHold(t, transport) })
	}
}

func testSIPpHold(t *testing.T, transport string) {
	h := sipHost(t, "  media_timeout: 1s\n", `
limits:
  idle_timeout: 1s
pipelines:
  echo: [{plugin: passthrough}]
`)
	h.completeCall(t, "hold.xml", "echo", "-t", transport)
}

// TestSIPpByeFromHost has the host hang up, on its media timeout: the
// caller sent no RTP. The caller answers the host's BYE.
func TestSIPpByeFromHost(t *testing.T) {
	h := sipHost(t, "  media_timeout: 1s\n", passthroughEcho)
	h.sipp(t, "bye_from_host.xml", "-key", "route", "echo")
	if !strings.Contains(h.logs.String(), "no RTP from the peer") {
		t.Fatal("the host's log does not say why it hung up")
	}
}

// TestSIPpCancel cancels a call while the host rings: 487 for the INVITE,
// and the call slot comes back.
func TestSIPpCancel(t *testing.T) {
	h := ringingHost(t)
	h.sipp(t, "cancel.xml", "-key", "route", "echo")
	h.waitCancelled(t)
}

// ringingHost starts a host whose calls ring until the caller cancels
// them.
func ringingHost(t *testing.T) *host {
	t.Helper()
	h := sipHost(t, "", passthroughEcho)
	sip.SetRinging(func(cancelled <-chan struct{}) {
		select {
		case <-cancelled:
		case <-time.After(time.Minute):
		}
	})
	t.Cleanup(func() { sip.SetRinging(nil) })
	return h
}

// waitCancelled waits for the host to answer a cancelled INVITE 487 and
// give its call slot back.
func (h *host) waitCancelled(t *testing.T) {
	t.Helper()
	sip.WaitFor(t, "the 487 and the call slot", func() bool {
		return h.metric(t, `voxhost_sip_invite_responses_total{code="487"}`) == 1 && h.metric(t, "voxhost_active_calls") == 0
	})
}

// TestSIPpRefusals: an unknown route is 404, a source no trunk lists 403,
// a full host 486 with Retry-After.
func TestSIPpRefusals(t *testing.T) {
	h := sipHost(t, "", `
limits:
  max_calls: 1
`+passthroughEcho)
	scenario, err := os.ReadFile(filepath.Join("testdata", "sipp", "refused.xml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		code, route, source string
	}{
		{"404", "nosuch", "127.0.0.1"},
		{"403", "echo", "127.0.0.2"},
	} {
		file := filepath.Join(dir, c.code+".xml")
		if err := os.WriteFile(file, bytes.ReplaceAll(scenario, []byte("[code]"), []byte(c.code)), 0o644); err != nil {
			t.Fatal(err)
		}
		h.sippAs(t, c.source, file, "-key", "route", c.route)
	}
	if got := h.metric(t, `voxhost_sip_invite_responses_total{code="404"}`); got != 1 {
		t.Fatalf("%v INVITEs refused 404", got)
	}
	if got := h.metric(t, `voxhost_sip_invite_responses_total{code="403"}`); got != 1 {
		t.Fatalf("%v INVITEs refused 403", got)
	}
}
