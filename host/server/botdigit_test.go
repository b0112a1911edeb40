package server_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
)

// liveLeg is a caller leg that sends nothing and stays up until it is
// closed, keeping what the call sends it in order: audio frames as "a"
// and their first byte in hex, text as it is.
type liveLeg struct {
	hungUp chan struct{}
	once   sync.Once

	mu   sync.Mutex
	sent []string
}

func newLiveLeg() *liveLeg { return &liveLeg{hungUp: make(chan struct{})} }

func (l *liveLeg) ReadMessage(*[]byte, int) (transport.MessageType, []byte, error) {
	<-l.hungUp
	return 0, nil, io.EOF
}

func (l *liveLeg) WriteMessage(typ transport.MessageType, msg []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if typ == transport.Binary {
		l.sent = append(l.sent, fmt.Sprintf("a%02x", msg[0]))
	} else {
		l.sent = append(l.sent, string(msg))
	}
	return nil
}

// Close hangs up, from either side.
func (l *liveLeg) Close(string) { l.once.Do(func() { close(l.hungUp) }) }

// got is what the call sent, and how many messages.
func (l *liveLeg) got() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.sent, " "), len(l.sent)
}

// keyProtocol is legProtocol whose sessions carry keys to the caller, as
// SIP's do: a key renders as the text "key:" and the digit.
type keyProtocol struct{ legProtocol }

func (keyProtocol) NewSession(cfg transport.SessionConfig) (transport.Session, error) {
	s, err := transport.Raw().NewSession(cfg)
	return keySession{Session: s}, err
}

type keySession struct{ transport.Session }

func (keySession) Digit(d byte) (transport.MessageType, []byte, bool) {
	return transport.Text, []byte("key:" + string(d)), true
}

// keyBot says three frames of 0x10, presses 5, says two of 0x20, presses
// #, and stays on the line.
func keyBot(t *testing.T) *botServer {
	frames := func(conn *gorilla.Conn, b byte, n int) {
		for range n {
			conn.WriteMessage(gorilla.BinaryMessage, bytes.Repeat([]byte{b}, 160))
		}
	}
	return startBot(t, func(conn *gorilla.Conn) {
		if _, _, err := conn.ReadMessage(); err != nil { // start
			return
		}
		frames(conn, 0x10, 3)
		conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"dtmf","digit":"5"}`))
		frames(conn, 0x20, 2)
		conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"dtmf","digit":"#"}`))
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	})
}

// TestBotKeysFollowTheirAudio: a bot's keys reach a caller whose protocol
// carries them (transport.DigitSender, as SIP's does) each after the
// audio the bot sent before it and before the audio after it; a caller
// whose protocol carries none hears the bot's audio without them.
func TestBotKeysFollowTheirAudio(t *testing.T) {
	for _, c := range []struct {
		name  string
		proto transport.Protocol
		want  string
	}{
		{"carried", keyProtocol{}, "a10 a10 a10 key:5 a20 a20 key:#"},
		{"not carried", legProtocol{}, "a10 a10 a10 a20 a20"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
				"main": {inbound: "passthrough", upstream: upstream(t, keyBot(t).url, "raw")},
			}, nil)
			adm, refusal := h.Admit(c.proto, "main", nil, "192.0.2.1:5060")
			if refusal != nil {
				t.Fatal(refusal)
			}
			leg := newLiveLeg()
			served := make(chan struct{})
			go func() {
				adm.Serve(leg)
				close(served)
			}()
			waitFor(t, func() bool {
				_, n := leg.got()
				return n >= len(strings.Fields(c.want))
			})
			leg.Close("")
			<-served
			if got, _ := leg.got(); got != c.want {
				t.Fatalf("the caller got %q, want %q", got, c.want)
			}
		})
	}
}

// mediaLeg is a liveLeg that reports figures of its media, as a SIP
// call's RTP does.
type mediaLeg struct {
	*liveLeg
	stats server.MediaStats
}

func (l mediaLeg) MediaStats() server.MediaStats { return l.stats }

// TestCallsShowALegsMedia: a live call whose leg reports its media
// (server.MediaReporter) lists those figures in Calls, for the console;
// a leg without has none.
func TestCallsShowALegsMedia(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	want := server.MediaStats{Packets: 500, Lost: 3, Concealed: 3, JitterMs: 4.5, BufferMs: 40, PeerReports: 2, PeerLostPercent: 1.5, PeerJitterMs: 2}
	for _, leg := range []server.Leg{mediaLeg{newLiveLeg(), want}, newLiveLeg()} {
		adm, refusal := h.Admit(legProtocol{}, "main", nil, "192.0.2.1:5060")
		if refusal != nil {
			t.Fatal(refusal)
		}
		go adm.Serve(leg)
		defer leg.Close("")
	}
	waitFor(t, func() bool { return len(h.Calls()) == 2 })
	var with, without int
	for _, c := range h.Calls() {
		switch {
		case c.Media == nil:
			without++
		case *c.Media == want:
			with++
		default:
			t.Fatalf("call %s shows media %+v, want %+v", c.ID, *c.Media, want)
		}
	}
	if with != 1 || without != 1 {
		t.Fatalf("%d calls show the leg's media and %d none; want 1 and 1", with, without)
	}
}
