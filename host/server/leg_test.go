package server_test

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// testLeg is a caller leg another package would carry: it hands the call
// its frames, then ends in order, and keeps what the call sends.
type testLeg struct {
	frames [][]byte

	mu     sync.Mutex
	got    []byte
	closed string
	done   chan struct{}
}

func (l *testLeg) ReadMessage(buf *[]byte, _ int) (transport.MessageType, []byte, error) {
	if len(l.frames) == 0 {
		return 0, nil, io.EOF
	}
	f := l.frames[0]
	l.frames = l.frames[1:]
	*buf = append((*buf)[:0], f...)
	return transport.Binary, *buf, nil
}

func (l *testLeg) WriteMessage(_ transport.MessageType, msg []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, msg...)
	return nil
}

func (l *testLeg) Close(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = reason
}

// legProtocol is a protocol that starts on connect, as SIP's does.
type legProtocol struct{}

func (legProtocol) Name() string          { return "testleg" }
func (legProtocol) Path() string          { return "" }
func (legProtocol) StartsOnConnect() bool { return true }
func (legProtocol) Buffers() bool         { return false }
func (legProtocol) NewSession(cfg transport.SessionConfig) (transport.Session, error) {
	return transport.Raw().NewSession(cfg)
}

// TestAdmitServesALeg: a call admitted by Admit and served over a Leg is
// a call like a WebSocket's: its audio comes back through the route's
// pipeline as voxhost run makes it, and its slot comes back when it ends.
func TestAdmitServesALeg(t *testing.T) {
	h := newHost(t, map[string]string{"main": "gain db=-6"}, nil)
	ulaw := ulawSpeech(1)
	leg := &testLeg{}
	for off := 0; off < len(ulaw); off += 160 {
		leg.frames = append(leg.frames, ulaw[off:off+160])
	}
	adm, refusal := h.Admit(legProtocol{}, "main", map[string]string{"customer": "42"}, "192.0.2.1:5060")
	if refusal != nil {
		t.Fatal(refusal)
	}
	if h.ActiveCalls() != 1 {
		t.Fatalf("%d active calls after Admit", h.ActiveCalls())
	}
	adm.Serve(leg)
	want := hosttest.OfflineUlaw(t, "gain db=-6", ulaw)[:len(ulaw)]
	if !bytes.Equal(leg.got, want) {
		t.Fatalf("the leg got %d bytes unlike voxhost run's %d", len(leg.got), len(want))
	}
	waitFor(t, func() bool { return h.ActiveCalls() == 0 })
	assertMetric(t, h, `voxhost_calls_total{outcome="completed",protocol="testleg"} 1`)
}

// TestAdmitRefuses: an unknown route, a full server; a call abandoned
// before its leg came up gives its slot back.
func TestAdmitRefuses(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.MaxCalls = 1 })
	if _, r := h.Admit(legProtocol{}, "nope", nil, "x"); r == nil || !r.UnknownRoute() {
		t.Fatalf("unknown route: %v", r)
	}
	adm, r := h.Admit(legProtocol{}, "", nil, "x")
	if r != nil {
		t.Fatal(r)
	}
	if _, r := h.Admit(legProtocol{}, "", nil, "x"); r == nil || r.Reason != "capacity" || r.RetryAfter <= 0 {
		t.Fatalf("at capacity: %+v", r)
	}
	adm.Abandon()
	adm.Abandon() // once only
	if h.ActiveCalls() != 0 {
		t.Fatalf("%d active calls after Abandon", h.ActiveCalls())
	}
	if _, r := h.Admit(legProtocol{}, "", map[string]string{"bad\x01name": "x"}, "x"); r == nil || r.Reason != "bad_query" {
		t.Fatalf("bad params: %+v", r)
	}
	assertMetric(t, h, `voxhost_rejected_connections_total{reason="capacity"} 1`)
}
