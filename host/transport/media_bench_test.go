package transport_test

import (
	"fmt"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// mediaPathCarriers are the protocols that have a client role too, each in
// the first format of mediaPathFormats its dialect carries: the media path
// of each is measured on messages its own other role renders.
var mediaPathCarriers = []string{"twilio", "telnyx", "plivo", "exotel", "vonage", "genesys", "jambonz", "asterisk", "audiofork", "raw"}

var mediaPathFormats = []codec.Format{codec.Telephony, {Encoding: codec.L16, Rate: 8000}, {Encoding: codec.L16, Rate: 16000}}

// mediaPair is a carrier's two roles with the stream started: the bot
// session's opening messages decoded by the server session.
func mediaPair(b *testing.B, name string) (transport.Session, transport.BotSession, codec.Format) {
	d, err := transport.LookupDialect(name)
	if err != nil {
		b.Fatal(err)
	}
	p, err := transport.LookupProtocol(name)
	if err != nil {
		b.Fatal(err)
	}
	var f codec.Format
	for _, f = range mediaPathFormats {
		if d.CheckFormat(f) == nil {
			break
		}
	}
	bot := d.NewBotSession(transport.BotConfig{Format: f, MaxAudio: maxAudio, Call: testCall})
	srv, err := p.NewSession(transport.SessionConfig{MaxFrameMs: 200})
	if err != nil {
		b.Fatal(err)
	}
	var in transport.Inbound
	if err := bot.Open(func(typ transport.MessageType, msg []byte) error {
		return srv.Decode(typ, msg, &in)
	}); err != nil {
		b.Fatal(err)
	}
	if srv.Format() != f {
		b.Fatalf("%s: the server started in %v, the bot in %v", name, srv.Format(), f)
	}
	return srv, bot, f
}

// BenchmarkMediaPath is one 20 ms media message of each carrier, both
// ways and in both roles: the server session decoding the caller's
// message (as the bot role renders it) and rendering the host's reply,
// and the bot session rendering the caller's audio and decoding the bot's.
func BenchmarkMediaPath(b *testing.B) {
	for _, name := range mediaPathCarriers {
		srv, bot, f := mediaPair(b, name)
		frame := pcmAt(f.Rate, 20*f.BytesPerMs())
		if f.Encoding != codec.L16 {
			frame = tone(0, 20*f.BytesPerMs())
		}
		typ, m := bot.Audio(frame)
		fromCaller := append([]byte(nil), m...)
		typ2, m2 := srv.Audio(frame)
		fromHost := append([]byte(nil), m2...)
		var in transport.Inbound
		audio := func(err error) error {
			if err == nil && in.Kind != transport.KindAudio {
				return fmt.Errorf("decoded %v, want audio", in.Kind)
			}
			return err
		}
		for _, op := range []struct {
			name string
			run  func() error
		}{
			{"server-decode", func() error { return audio(srv.Decode(typ, fromCaller, &in)) }},
			{"server-render", func() error { srv.Audio(frame); return nil }},
			{"bot-decode", func() error { return audio(bot.Decode(typ2, fromHost, &in)) }},
			{"bot-render", func() error { bot.Audio(frame); return nil }},
		} {
			b.Run(name+"/"+op.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := op.run(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
