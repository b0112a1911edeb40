package botsim_test

import (
	"bytes"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/botsim"
)

// botLeg is the host's side of a call to the simulator: the dialect's
// client session, as host/server drives it, over a real socket.
type botLeg struct {
	t    *testing.T
	conn *websocket.Conn
	sess transport.BotSession
	in   transport.Inbound
}

// dialBot opens the dialect's session, and waits for the bot's
// acknowledgement of it where the dialect has one, as the host does.
func dialBot(t *testing.T, url, dialect string, f codec.Format, opts map[string]string) *botLeg {
	t.Helper()
	b := openBot(t, url, dialect, f, opts)
	if d, _ := transport.LookupDialect(dialect); d != nil {
		if _, ok := d.(transport.SetupAcknowledger); ok {
			if in := b.next(); in.Kind != transport.KindReady {
				t.Fatalf("the bot answered the set-up with %v, want its acknowledgement", in.Kind)
			}
		}
	}
	return b
}

// openBot opens the dialect's session.
func openBot(t *testing.T, url, dialect string, f codec.Format, opts map[string]string) *botLeg {
	t.Helper()
	d, err := transport.LookupDialect(dialect)
	if err != nil {
		t.Fatal(err)
	}
	b := &botLeg{t: t, conn: dial(t, url, nil), sess: d.NewBotSession(transport.BotConfig{Format: f, MaxAudio: 1 << 16, Options: opts,
		Call: transport.CallInfo{CallID: "CA1", StreamID: "MZ1", Route: "relay", Params: map[string]string{"lang": "en"}}})}
	if err := b.sess.Open(b.send); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *botLeg) send(typ transport.MessageType, msg []byte) error {
	return b.conn.Write(ctx(b.t), websocket.MessageType(typ), msg)
}

// next decodes the bot's messages until one of a kind other than
// KindIgnore.
func (b *botLeg) next() *transport.Inbound {
	b.t.Helper()
	for {
		typ, msg, err := b.conn.Read(ctx(b.t))
		if err != nil {
			b.t.Fatal(err)
		}
		if err := b.sess.Decode(transport.MessageType(typ), msg, &b.in); err != nil {
			b.t.Fatalf("the host's %T refused %.100q: %v", b.sess, msg, err)
		}
		if b.in.Kind != transport.KindIgnore {
			return &b.in
		}
	}
}

// TestTheHostsDialectsTalkToTheSimulator runs each dialect's client
// session, the host's side of a relayed call, against the simulator:
// what the host sends is what the bot echoes, a bot's barge-in is the
// host's KindClear, and the bot records the host's stop.
func TestTheHostsDialectsTalkToTheSimulator(t *testing.T) {
	l16 := func(rate int) codec.Format { return codec.Format{Encoding: codec.L16, Rate: rate} }
	for _, c := range []struct {
		name, dialect string
		f             codec.Format
		opts          map[string]string
	}{
		{"twilio", botsim.ProtocolTwilio, codec.Telephony, nil},
		{"raw mulaw", botsim.ProtocolRaw, codec.Telephony, nil},
		{"raw l16 16k", botsim.ProtocolRaw, l16(16000), nil},
		{"raw l16 24k", botsim.ProtocolRaw, l16(24000), nil},
		{"openai pcm", botsim.ProtocolOpenAI, l16(24000), nil},
		{"openai pcmu beta", botsim.ProtocolOpenAI, codec.Telephony, map[string]string{"api": "beta"}},
		{"deepgram mulaw", botsim.ProtocolDeepgram, codec.Telephony, map[string]string{"think_model": "gpt-4o-mini"}},
		{"deepgram l16 16k", botsim.ProtocolDeepgram, l16(16000), map[string]string{"think_model": "gpt-4o-mini", "listen_model": "nova-3"}},
		{"elevenlabs ulaw", botsim.ProtocolElevenLabs, codec.Telephony, map[string]string{"first_message": "Hi", "dynamic.name": "Ada"}},
		{"gemini", botsim.ProtocolGemini, l16(24000), map[string]string{"model": "gemini-live-2.5-flash", "voice": "Puck"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sim, url := botsim.Start(t, botsim.Config{})
			b := dialBot(t, url+botsim.Paths[c.dialect], c.dialect, c.f, c.opts)
			frame := make([]byte, 20*c.f.BytesPerMs())
			for i := range frame {
				frame[i] = byte(i * 7)
			}
			for range 3 {
				typ, msg := b.sess.Audio(frame)
				if err := b.send(typ, msg); err != nil {
					t.Fatal(err)
				}
				if in := b.next(); in.Kind != transport.KindAudio || !bytes.Equal(in.Audio, frame) {
					t.Fatalf("got %v of %d bytes, want the %d-byte frame back", in.Kind, len(in.Audio), len(frame))
				}
			}
			calls := sim.Calls()
			if len(calls) != 1 || calls[0].Format != c.f || calls[0].AudioIn != int64(3*len(frame)) {
				t.Fatalf("the bot recorded %+v", calls)
			}
			if err := sim.Interrupt(calls[0].ID); err != nil {
				t.Fatal(err)
			}
			if in := b.next(); in.Kind != transport.KindClear {
				t.Fatalf("the bot's barge-in reached the host as %v", in.Kind)
			}
			typ, msg, ok := b.sess.Stop()
			if !ok {
				return // the speech providers' sockets just close
			}
			if err := b.send(typ, msg); err != nil {
				t.Fatal(err)
			}
			rec := waitCall(t, sim, func(c botsim.Call) bool { return !c.Live })
			if !rec.Stopped || rec.Err != "" {
				t.Errorf("after the host's stop: stopped %v, err %q", rec.Stopped, rec.Err)
			}
			if c.dialect == botsim.ProtocolRaw && !bytes.Contains([]byte(rec.StartMessage), []byte(`"route":"relay"`)) {
				t.Errorf("raw start %q", rec.StartMessage)
			}
		})
	}
}

// TestTheHostsDialectsHearTheSimulatorSpeak has the bot speak to each
// dialect's client session: audio, then its mark, whose acknowledgement
// the bot records.
func TestTheHostsDialectsHearTheSimulatorSpeak(t *testing.T) {
	for _, c := range []struct {
		dialect string
		f       codec.Format
	}{{botsim.ProtocolTwilio, codec.Telephony}, {botsim.ProtocolRaw, codec.Format{Encoding: codec.L16, Rate: 8000}}} {
		t.Run(c.dialect, func(t *testing.T) {
			sim, url := botsim.Start(t, botsim.Config{Mode: botsim.Speak})
			b := dialBot(t, url+botsim.Paths[c.dialect], c.dialect, c.f, nil)
			audio := 0
			in := b.next()
			for ; in.Kind == transport.KindAudio; in = b.next() {
				audio += len(in.Audio)
			}
			if in.Kind != transport.KindMark || in.Mark != "speech" || audio != 2000*c.f.BytesPerMs() {
				t.Fatalf("%d bytes of audio, then %v %q; want the 2 s of default speech and its mark", audio, in.Kind, in.Mark)
			}
			typ, msg, _ := b.sess.MarkPlayed(in.Mark)
			if err := b.send(typ, msg); err != nil {
				t.Fatal(err)
			}
			waitCall(t, sim, func(c botsim.Call) bool { return len(c.MarksAcked) == 1 && c.MarksAcked[0] == "speech" })
		})
	}
}
