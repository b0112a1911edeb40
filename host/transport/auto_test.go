package transport_test

import (
	"encoding/base64"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// opening is a stream as a carrier opens it, then a message of audio.
type opening struct {
	name  string // the protocol it must be detected as
	query string
	msgs  []sent
}

func text(msgs ...string) []sent {
	out := make([]sent, len(msgs))
	for i, m := range msgs {
		out[i] = sent{transport.Text, m}
	}
	return out
}

// openings are the first messages of every carrier the auto endpoint
// recognises, from each one's own tests (which quote its documents), as
// pipecat's runner tells them apart.
func openings() []opening {
	frame := tone(0, 160)
	b64 := base64.StdEncoding.EncodeToString(frame)
	exotelNoFormat := strings.Replace(exotelDocStart, `"media_format"`, `"other"`, 1)
	return []opening{
		{"twilio", "", text(connectedMsg, startMsg, mediaMsg(2, 1, "inbound", frame))},
		{"telnyx", "", text(telnyxConnected, telnyxStartMsg("PCMU", 8000), telnyxMediaMsg("inbound", b64))},
		{"plivo", "", text(plivoDocStart, plivoMediaMsg(2, "inbound", frame))},
		{"exotel", "", text(exotelConnected, exotelDocStart, exotelMediaMsg(3, 2, pcmAt(8000, 1600)))},
		{"exotel", "sample-rate=16000", text(exotelConnected, exotelNoFormat, exotelMediaMsg(3, 2, pcmAt(16000, 3200)))},
		{"vonage", "", append(text(`{"event":"websocket:connected","content-type":"audio/l16;rate=16000","pipeline":"loud"}`),
			sent{transport.Binary, string(pcmAt(16000, 640))})},
		{"asterisk", "", append(text("MEDIA_START connection_id:f3c5 channel:WebSocket/conn1-00000001 channel_id:1761245643.1 format:ulaw optimal_frame_size:160 ptime:20"),
			sent{transport.Binary, string(frame)})},
		{"asterisk", "", append(text(`{"event":"MEDIA_START","connection_id":"f3c5","channel":"WebSocket/conn1-00000001","channel_id":"1761245643.1","format":"ulaw","optimal_frame_size":160,"ptime":20}`),
			sent{transport.Binary, string(frame)})},
		{"genesys", "", append(text(`{"version":"2","type":"open","seq":1,"clientseq":0,"id":"e160e428-53e2-487c-977d-96989bf5c99d","position":"PT0S",`+
			`"parameters":{"organizationId":"d7934305-0972-4844-938e-9060eef73d05","conversationId":"090eaa2f-72fa-480a-83e0-8667ff89c0ec",`+
			`"participant":{"id":"883efee8-3d6c-4537-b500-6d7ca4b92fa0","ani":"+1-555-555-1234","aniName":"John Doe","dnis":"+1-800-555-6789"},`+
			`"media":[{"type":"audio","format":"PCMU","channels":["external"],"rate":8000}],"language":"en-US"}}`),
			sent{transport.Binary, string(frame)})},
		{"jambonz", "", append(text(`{"callSid":"b6d6d5b2-8f3e-4c5e-9d36-1b9f0c8c2d1e","accountSid":"a1b2","from":"+15083084809","to":"+15083728299","sampleRate":8000,"mixType":"mono"}`),
			sent{transport.Binary, string(pcmAt(8000, 320))})},
	}
}

// TestAutoDetectsEveryCarrier: on /auto each carrier's stream decodes
// message for message as on its own path, and the session says which
// carrier it is once it knows.
func TestAutoDetectsEveryCarrier(t *testing.T) {
	auto := transport.Auto()
	if auto.Name() != "auto" || auto.Path() != "/auto" || auto.StartsOnConnect() || auto.Buffers() {
		t.Fatalf("Name %q, Path %q, StartsOnConnect %v, Buffers %v", auto.Name(), auto.Path(), auto.StartsOnConnect(), auto.Buffers())
	}
	// A client that asks for its subprotocol (jambonz's) is given it on
	// /auto as on its own path.
	for _, p := range transport.Protocols() {
		for _, sp := range transport.SubprotocolsOf(p) {
			if !slices.Contains(transport.SubprotocolsOf(auto), sp) {
				t.Errorf("/auto does not accept %s's subprotocol %s", p.Name(), sp)
			}
		}
	}
	for _, o := range openings() {
		t.Run(o.name+o.query, func(t *testing.T) {
			p, err := transport.LookupProtocol(o.name)
			if err != nil {
				t.Skipf("%v: not in this build yet", err)
			}
			a := sessionQuery(t, auto, o.query)
			direct := sessionQuery(t, p, o.query)
			det := a.(transport.Detector)
			if det.Detected() != nil || a.Format() != codec.Telephony {
				t.Fatalf("before any message: Detected %v, Format %v", det.Detected(), a.Format())
			}
			if _, _, ok := a.Clear(); ok {
				t.Error("Clear rendered a message before the carrier was known")
			}
			for i, m := range o.msgs {
				var got, want transport.Inbound
				gotErr := a.Decode(m.typ, []byte(m.msg), &got)
				wantErr := direct.Decode(m.typ, []byte(m.msg), &want)
				if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
					t.Fatalf("message %d: error %v, on its own path %v", i, gotErr, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("message %d decoded as %+v, on its own path %+v", i, got, want)
				}
			}
			if d := det.Detected(); d == nil || d.Name() != o.name || a.Format() != direct.Format() {
				t.Fatalf("detected %v in %v, want %s in %v", d, a.Format(), o.name, direct.Format())
			}
			// Everything else is the carrier's own.
			frame := make([]byte, 20*a.Format().BytesPerMs())
			gotTyp, gotMsg := a.Audio(frame)
			wantTyp, wantMsg := direct.Audio(frame)
			if gotTyp != wantTyp || string(gotMsg) != string(wantMsg) {
				t.Errorf("audio rendered as %s, on its own path %s", gotMsg, wantMsg)
			}
			for _, r := range []struct {
				name      string
				got, want func() (transport.MessageType, []byte, bool)
			}{
				{"mark", func() (transport.MessageType, []byte, bool) { return a.Mark("m") }, func() (transport.MessageType, []byte, bool) { return direct.Mark("m") }},
				{"clear", a.Clear, direct.Clear},
				{"hangup", a.Hangup, direct.Hangup},
			} {
				gt, gm, gok := r.got()
				wt, wm, wok := r.want()
				if gt != wt || string(gm) != string(wm) || gok != wok {
					t.Errorf("%s rendered as %s (%v), on its own path %s (%v)", r.name, gm, gok, wm, wok)
				}
			}
		})
	}
}

func TestAutoErrors(t *testing.T) {
	tests := []struct {
		name        string
		query       string
		msgs        []sent
		want        string
		unsupported bool
	}{
		{"binary first", "", []sent{{transport.Binary, string(tone(0, 160))}},
			"auto: binary message before any carrier was recognised: a stream that starts with audio needs its protocol's own path (/ws for raw)", true},
		{"not JSON", "", text("hello"), "auto: the first message is not a JSON object: " + autoWant, false},
		{"media first", "", text(`{"event":"media","media":{"payload":"AAAA"}}`),
			`auto: the first message is none a carrier opens with (event "media"): ` + autoWant, false},
		{"a start of no carrier", "", text(connectedMsg, `{"event":"start","start":{"id":"x"}}`),
			`auto: the first message is none a carrier opens with (event "start"): ` + autoWant, false},
		{"greetings only", "", text(connectedMsg, connectedMsg, connectedMsg), "auto: no carrier recognised in the first 3 messages: " + autoWant, false},
		{"a query the carrier refuses", "sample-rate=44100", text(exotelConnected, exotelDocStart),
			`auto: recognised exotel, but exotel: sample-rate="44100" is not a rate Exotel streams (want 8000, 16000 or 24000)`, true},
		{"the carrier refuses its start", "", text(telnyxStartMsg("OPUS", 16000)),
			`telnyx: unsupported media_format "OPUS" at 16000 Hz, 1 channel(s); voxhost takes PCMU or PCMA at 8000 Hz, or L16 at 8000, 16000 or 24000 Hz, 1 channel`, true},
	}
	for _, name := range []string{"genesys", "jambonz"} {
		if _, err := transport.LookupProtocol(name); err == nil {
			continue // in this build: its own tests cover it
		}
		msg := `{"version":"2","type":"open","seq":1,"clientseq":0,"id":"e160e428-53e2-487c-977d-96989bf5c99d","position":"PT0S","parameters":{}}`
		if name == "jambonz" {
			msg = `{"callSid":"b6d6d5b2-8f3e-4c5e-9d36-1b9f0c8c2d1e","from":"+15083084809","to":"+15083728299","sampleRate":8000,"mixType":"mono"}`
		}
		tests = append(tests, struct {
			name        string
			query       string
			msgs        []sent
			want        string
			unsupported bool
		}{name, "", text(msg), "auto: recognised " + name + ", but this voxhost has no " + name + " protocol", true})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sessionQuery(t, transport.Auto(), tt.query)
			var in transport.Inbound
			var err error
			for _, m := range tt.msgs {
				if err = s.Decode(m.typ, []byte(m.msg), &in); err != nil {
					break
				}
			}
			var perr *transport.ProtocolError
			if !errors.As(err, &perr) || err.Error() != tt.want || perr.Unsupported != tt.unsupported {
				t.Fatalf("error %v (unsupported %v)\nwant  %s (unsupported %v)", err, perr != nil && perr.Unsupported, tt.want, tt.unsupported)
			}
		})
	}
}

// autoWant is what the auto endpoint's errors say it recognises.
const autoWant = "want the start of a Twilio, Telnyx, Plivo or Exotel stream, Vonage's websocket:connected, Asterisk's MEDIA_START, Genesys AudioHook's open or Jambonz's call info"

func FuzzAutoDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, binary bool, first, second string) {
		s := session(transport.Auto())
		typ := transport.Text
		if binary {
			typ = transport.Binary
		}
		var in transport.Inbound
		for _, msg := range []string{first, second} {
			err := s.Decode(typ, []byte(msg), &in)
			var perr *transport.ProtocolError
			if err != nil && !errors.As(err, &perr) {
				t.Fatalf("error %v (%T) is not a *ProtocolError", err, err)
			}
			if err != nil {
				return
			}
			if d := s.(transport.Detector).Detected(); in.Kind != transport.KindIgnore && d == nil {
				t.Fatalf("decoded %v before the carrier was known", in.Kind)
			}
			typ = transport.Text
		}
	})
}
