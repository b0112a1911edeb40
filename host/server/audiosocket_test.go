package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

// AudioSocket calls over real TCP connections, as Asterisk's AudioSocket()
// application places them: a UUID frame, slin frames of the channel's rate,
// DTMF frames, and 00 00 00 to hang up. The frames are built by hand from
// the layout Asterisk documents (type, big-endian uint16 length, payload;
// docs.asterisk.org/Configuration/Channel-Drivers/AudioSocket/), not by the
// host's own client role, so that both roles answer to the spec.

// asFrame is one AudioSocket frame.
func asFrame(kind byte, payload []byte) []byte {
	return append([]byte{kind, byte(len(payload) >> 8), byte(len(payload))}, payload...)
}

// asUUID is the UUID of the README's dialplan example,
// 40325ec2-5efd-4bd3-805f-53576e581d13, as its 16 bytes.
var asUUID = []byte{0x40, 0x32, 0x5e, 0xc2, 0x5e, 0xfd, 0x4b, 0xd3, 0x80, 0x5f, 0x53, 0x57, 0x6e, 0x58, 0x1d, 0x13}

// serveAudioSocket serves h's calls of AudioSocket on a loopback TCP port
// of their own, on the route named route ("" for the default), and returns
// its address.
func serveAudioSocket(t *testing.T, h *testHost, route string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.ServeStream(ctx, l, transport.AudioSocket(), route) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeStream: %v", err)
		}
	})
	return l.Addr().String()
}

// asCall is the PBX's end of one AudioSocket connection.
type asCall struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialAudioSocket(t *testing.T, addr string) *asCall {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &asCall{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// send writes bytes as they are: whole frames or, to test a peer that
// vanishes, part of one.
func (a *asCall) send(b ...[]byte) {
	a.t.Helper()
	for _, m := range b {
		if _, err := a.conn.Write(m); err != nil {
			a.t.Fatal(err)
		}
	}
}

// next reads one frame from the host; io.EOF when it closed the
// connection.
func (a *asCall) next() (kind byte, payload []byte, err error) {
	a.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [3]byte
	if _, err := io.ReadFull(a.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	payload = make([]byte, binary.BigEndian.Uint16(hdr[1:]))
	if _, err := io.ReadFull(a.r, payload); err != nil {
		return 0, nil, err
	}
	return hdr[0], payload, nil
}

// untilHangup reads the host's frames until its hang-up frame, which must
// be followed by the close, and returns the audio of the frames of type
// kind; a frame of any other type fails the test (AudioSocket carries no
// marks, clears or events, and Asterisk drops a call on a frame it does
// not know).
func (a *asCall) untilHangup(kind byte) []byte {
	a.t.Helper()
	var audio []byte
	for {
		k, payload, err := a.next()
		if err != nil {
			a.t.Fatalf("before the host's hang-up frame: %v", err)
		}
		switch k {
		case kind:
			audio = append(audio, payload...)
		case 0x00:
			if _, _, err := a.next(); err != io.EOF {
				a.t.Fatalf("after the hang-up frame: %v, want the close", err)
			}
			return audio
		default:
			a.t.Fatalf("a frame of type 0x%02x from the host, % x", k, payload)
		}
	}
}

// TestAudioSocketEchoCall runs calls at 8 and 16 kHz through an echo
// route: the UUID starts the call, its first audio frame's type sets the
// rate, the host answers in that type with exactly what the pipeline makes
// of the audio in 20 ms frames, and the caller's hang-up frame is answered
// by the host's before it closes.
func TestAudioSocketEchoCall(t *testing.T) {
	const spec = "gain db=-6"
	h := newHost(t, map[string]string{"main": spec}, nil)
	addr := serveAudioSocket(t, h, "")
	cat := hosttest.Catalog(t)
	for _, tt := range []struct {
		kind byte
		rate int
	}{{0x10, 8000}, {0x12, 16000}} {
		pcm := signal.Speech(tt.rate, 0.6)
		frame := tt.rate / 1000 * 2 * 20
		want := hosttest.Process(t, hosttest.Pipeline(t, cat, spec, pipeline.CallConfig{InputRate: tt.rate, MaxFrameMs: 100}), pcm, frame)

		a := dialAudioSocket(t, addr)
		a.send(asFrame(0x01, asUUID))
		for off := 0; off < len(pcm); off += frame {
			a.send(asFrame(tt.kind, pcm[off:off+frame]))
		}
		a.send([]byte{0x00, 0x00, 0x00})
		got := a.untilHangup(tt.kind)
		if !bytes.Equal(got, want) {
			t.Errorf("%d Hz: %d bytes back, want the pipeline's %d, byte for byte (equal: %v)", tt.rate, len(got), len(want), bytes.Equal(got, want))
		}
	}
	assertMetric(t, h, `voxhost_calls_total{outcome="completed",protocol="audiosocket"} 2`)
	waitFor(t, func() bool { return h.ActiveCalls() == 0 && h.rt.LiveInstances() == 0 })
}

// TestAudioSocketDTMFReachesThePlugins sends a digit mid-call: the plugin
// that clears on DTMF hears it and asks for a clear, which AudioSocket has
// no frame for, so the host sends nothing but audio.
func TestAudioSocketDTMFReachesThePlugins(t *testing.T) {
	h := newHost(t, map[string]string{"main": testdataPlugin("clear_on_dtmf")}, nil)
	addr := serveAudioSocket(t, h, "main")
	pcm := signal.Speech(8000, 0.2)
	a := dialAudioSocket(t, addr)
	a.send(asFrame(0x01, asUUID), asFrame(0x10, pcm[:320]), asFrame(0x03, []byte("5")), asFrame(0x10, pcm[320:640]), []byte{0, 0, 0})
	if got := a.untilHangup(0x10); !bytes.Equal(got, pcm[:640]) {
		t.Errorf("%d bytes of audio back, want the 640 sent", len(got))
	}
	line := regexp.MustCompile(`voxhost_plugin_events_total\{name="clear",plugin="[^"]*"\} 1\n`)
	waitFor(t, func() bool { return line.MatchString(metrics(t, h)) })
}

// TestAudioSocketHostHangsUp: when the host ends a call (here its idle
// timeout, the caller sending nothing after its UUID), it sends the
// hang-up frame before closing, as Asterisk expects.
func TestAudioSocketHostHangsUp(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.IdleTimeout = 200 * time.Millisecond })
	a := dialAudioSocket(t, serveAudioSocket(t, h, ""))
	a.send(asFrame(0x01, asUUID), asFrame(0x10, make([]byte, 320)))
	if got := a.untilHangup(0x10); len(got) != 320 {
		t.Errorf("%d bytes of audio before the hang-up, want 320", len(got))
	}
	assertMetric(t, h, `voxhost_calls_total{outcome="idle",protocol="audiosocket"} 1`)
}

// A malformed frame, a rate the host does not carry or a frame over the
// limit ends that call alone: the host hangs up on it, counts it, and a
// bystander call on the same listener goes on.
func TestAudioSocketMalformedEndsOnlyThatCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.MaxMessageBytes = 2048 })
	addr := serveAudioSocket(t, h, "")
	bystander := dialAudioSocket(t, addr)
	bystander.send(asFrame(0x01, asUUID))
	echo := func() {
		t.Helper()
		frame := asFrame(0x10, signal.Speech(8000, 0.02))
		bystander.send(frame)
		if k, payload, err := bystander.next(); err != nil || k != 0x10 || !bytes.Equal(payload, frame[3:]) {
			t.Fatalf("the bystander call was disturbed: %v, type 0x%02x", err, k)
		}
	}
	echo()
	for _, tc := range []struct {
		name   string
		frames [][]byte
		unread bool // the host hangs up with bytes of ours unread: its close may come as a reset
	}{
		{"audio before the UUID", [][]byte{asFrame(0x10, make([]byte, 320))}, false},
		{"short UUID", [][]byte{asFrame(0x01, asUUID[:8])}, false},
		{"half a sample", [][]byte{asFrame(0x01, asUUID), asFrame(0x10, make([]byte, 321))}, false},
		{"bad digit", [][]byte{asFrame(0x01, asUUID), asFrame(0x03, []byte("x"))}, false},
		{"48 kHz", [][]byte{asFrame(0x01, asUUID), asFrame(0x16, make([]byte, 1920))}, false},
		{"over the limit", [][]byte{asFrame(0x01, asUUID), asFrame(0x10, make([]byte, 3200))}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := dialAudioSocket(t, addr)
			a.send(tc.frames...)
			if !tc.unread {
				a.untilHangup(0x10)
				return
			}
			for {
				k, _, err := a.next()
				if err != nil {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						t.Fatal("the host did not end the call")
					}
					return // its hang-up frame, then the close; or a reset
				}
				if k != 0x00 && k != 0x10 {
					t.Fatalf("a frame of type 0x%02x", k)
				}
			}
		})
		echo()
	}
	m := metrics(t, h)
	for _, want := range []string{
		`voxhost_malformed_messages_total{protocol="audiosocket",reason="malformed"} 5`,
		`voxhost_malformed_messages_total{protocol="audiosocket",reason="too_big"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// 48 kHz is well formed but not carried: its call ends unsupported.
	assertMetric(t, h, `voxhost_calls_total{outcome="malformed",protocol="audiosocket"} 6`)
	bystander.send([]byte{0, 0, 0})
	bystander.untilHangup(0x10)
}

// A PBX that vanishes inside a frame (half a header, or a header and half
// its payload, then the close) ends its call as disconnected: its plugin
// instances are released and a bystander call goes on.
func TestAudioSocketCallerVanishesMidFrame(t *testing.T) {
	h := newHost(t, map[string]string{"main": "gain db=-3"}, nil)
	addr := serveAudioSocket(t, h, "")
	bystander := dialAudioSocket(t, addr)
	bystander.send(asFrame(0x01, asUUID))
	frame := asFrame(0x10, signal.Speech(8000, 0.02))
	echo := func() {
		t.Helper()
		bystander.send(frame)
		if k, payload, err := bystander.next(); err != nil || k != 0x10 || len(payload) != 320 {
			t.Fatalf("the bystander call was disturbed: %v, type 0x%02x", err, k)
		}
	}
	echo()
	for name, tail := range map[string][]byte{
		"half a header":  frame[:2],
		"half a payload": frame[:3+160],
		"a header alone": frame[:3],
	} {
		t.Run(name, func(t *testing.T) {
			a := dialAudioSocket(t, addr)
			a.send(asFrame(0x01, asUUID), frame)
			if k, _, err := a.next(); err != nil || k != 0x10 {
				t.Fatalf("first frame: %v, type 0x%02x", err, k)
			}
			a.send(tail)
			a.conn.Close()
		})
		echo()
	}
	assertMetric(t, h, `voxhost_calls_total{outcome="disconnected",protocol="audiosocket"} 3`)
	waitFor(t, func() bool { return h.ActiveCalls() == 1 && h.rt.LiveInstances() == 1 })
	echo()
	bystander.send([]byte{0, 0, 0})
	bystander.untilHangup(0x10)
	waitFor(t, func() bool { return h.ActiveCalls() == 0 && h.rt.LiveInstances() == 0 })
}

// ServeStream refuses a protocol that runs over WebSocket, and an unknown
// route.
func TestServeStreamRefuses(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := h.ServeStream(context.Background(), l, transport.Twilio(), ""); err == nil {
		t.Error("twilio served over a byte stream")
	}
	if err := h.ServeStream(context.Background(), l, transport.AudioSocket(), "nope"); err == nil || !strings.Contains(err.Error(), `unknown pipeline "nope"`) {
		t.Errorf("unknown route: %v", err)
	}
}

// TestAudioSocketConnectionsPerAddressAreCapped: the AudioSocket listener
// caps the open connections of one source address as the HTTP listener
// does; a connection over the cap is closed before it is a call, counted
// as refused, and the calls under it carry on.
func TestAudioSocketConnectionsPerAddressAreCapped(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.HTTP.MaxConnsPerIP = 2 })
	addr := serveAudioSocket(t, h, "")
	held := []*asCall{dialAudioSocket(t, addr), dialAudioSocket(t, addr)}
	for _, a := range held {
		a.send(asFrame(0x01, asUUID))
	}
	waitFor(t, func() bool { return h.ActiveCalls() == 2 })
	over := dialAudioSocket(t, addr)
	if _, _, err := over.next(); err == nil {
		t.Fatal("the third connection from one address got a frame, want it closed")
	}
	assertMetric(t, h, `voxhost_rejected_connections_total{reason="conns_per_ip"} 1`)
	frame := asFrame(0x10, make([]byte, 320))
	for _, a := range held {
		a.send(frame)
		if kind, _, err := a.next(); err != nil || kind != 0x10 {
			t.Fatalf("a call under the cap: frame type 0x%02x, %v", kind, err)
		}
		a.send(asFrame(0x00, nil))
		a.untilHangup(0x10)
	}
}
