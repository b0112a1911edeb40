package transport_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// AudioHook's messages, as Genesys' reference implementations type them
// (github.com/purecloudlabs/audiohook-reference-implementation,
// app/audiohook/src/protocol/message.ts; the Audio Connector's
// github.com/GenesysCloudBlueprints/audioconnector-server-reference-implementation,
// src/protocol/message.ts and voice-bots.ts):
//
//	MessageBase       = {version: '2', id: Uuid, type, seq: SequenceNumber, parameters}
//	ClientMessageBase = MessageBase & {serverseq: SequenceNumber, position: Duration}
//	ServerMessageBase = MessageBase & {clientseq: SequenceNumber}
//	Duration          = `PT${number}S`  // ISO8601 duration in seconds
//	OpenParameters    = {organizationId, conversationId, participant: {id, ani, aniName, dnis},
//	                     media: [{type: 'audio', format: 'PCMU' | 'L16', channels: ('external' | 'internal')[], rate: 8000}],
//	                     language?, customConfig?, inputVariables?: {[key]: string}}
//	OpenedParameters  = {media, discardTo?, startPaused?}
//	DisconnectParameters = {reason: 'completed' | 'unauthorized' | 'error', info?, outputVariables?}
//	DTMFParameters    = {digit: string}
//	EventEntityBargeIn = {type: 'barge_in', data: {}}
//
// and as their sessions number them: the server's createMessage sends
// "seq: ++this.lastServerSequenceNumber, clientseq:
// this.lastClientSequenceNumber"; a client message whose "seq !==
// this.lastClientSequenceNumber + 1" or whose "serverseq >
// this.lastServerSequenceNumber" is refused; the client refuses a pong
// whose "clientseq ... differs from ping's seq". Genesys' help page ("What
// happens during a successful session between Genesys Cloud and your
// AudioHook server"): "the client initiates an open transaction. The
// client does not send audio until the server completes the open
// transaction and responds with an "opened" message", "The client or the
// server can send a "paused" message", "the client initiates a close
// transaction ... The client does not send any audio frames after the
// client issues the "close" message". The reference client streams 200 ms
// frames ("toneFrameDurationMs = 200"), stereo interleaving the offer's
// channels.
const (
	genesysID   = "e160e428-53e2-487c-977d-96989bf5c99d"
	genesysOrg  = "d7934305-0972-4844-938e-9060eef73d05"
	genesysConv = "090eaa2f-72fa-480a-83e0-8667ff89c0ec"
)

// genesysOpenMsg is open with the media offers given.
func genesysOpenMsg(media string) string {
	return `{
  "version": "2",
  "type": "open",
  "seq": 1,
  "serverseq": 0,
  "id": "` + genesysID + `",
  "position": "PT0S",
  "parameters": {
    "organizationId": "` + genesysOrg + `",
    "conversationId": "` + genesysConv + `",
    "participant": {
      "id": "883efee8-3d6c-4537-b500-6d7ca4b92fa0",
      "ani": "+1-555-555-1234",
      "aniName": "John Doe",
      "dnis": "+1-800-555-6789"
    },
    "media": ` + media + `,
    "language": "en-US",
    "customConfig": {},
    "inputVariables": {"pipeline": "loud", "intent": "billing"}
  }
}`
}

// The offers of a call Genesys streams both ways: stereo first, then each
// channel alone.
const genesysOffers = `[
      {"type": "audio", "format": "PCMU", "channels": ["external", "internal"], "rate": 8000},
      {"type": "audio", "format": "PCMU", "channels": ["external"], "rate": 8000},
      {"type": "audio", "format": "PCMU", "channels": ["internal"], "rate": 8000}
    ]`

// genesysMsg is a client message of type typ with seq, serverseq and the
// position given.
func genesysMsg(typ string, seq, serverseq int, position, params string) string {
	return fmt.Sprintf(`{"version":"2","id":%q,"type":%q,"seq":%d,"serverseq":%d,"position":%q,"parameters":%s}`,
		genesysID, typ, seq, serverseq, position, params)
}

// genesysServerMsg is what the session sends: type, seq, clientseq, params.
func genesysServerMsg(typ string, seq, clientseq int, params string) string {
	return fmt.Sprintf(`{"version":"2","type":%q,"seq":%d,"clientseq":%d,"id":%q,"parameters":%s}`, typ, seq, clientseq, genesysID, params)
}

// genesysOpened returns a Genesys session that opened with offers.
func genesysOpened(t testing.TB, offers string) transport.Session {
	t.Helper()
	s := session(transport.Genesys())
	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(genesysOpenMsg(offers)), &in); err != nil || in.Kind != transport.KindStart {
		t.Fatalf("open: %v, %v", in.Kind, err)
	}
	return s
}

func TestGenesysConformance(t *testing.T) {
	p := transport.Genesys()
	if p.Name() != "genesys" || p.Path() != "/genesys" || p.StartsOnConnect() || p.Buffers() {
		t.Fatalf("genesys: name %q, path %q, starts on connect %v, buffers %v", p.Name(), p.Path(), p.StartsOnConnect(), p.Buffers())
	}
	if min, mult := p.(transport.AudioChunker).AudioChunk(codec.Telephony); min != 1600 || mult != 8 {
		t.Errorf("chunks of PCMU: at least %d bytes in multiples of %d, want 1600 and 8", min, mult)
	}
	s := session(p)
	if third(s.Clear()) || third(s.Hangup()) {
		t.Error("a barge-in or disconnect rendered before open")
	}
	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(genesysOpenMsg(genesysOffers)), &in); err != nil {
		t.Fatal(err)
	}
	want := &transport.Start{StreamID: genesysID, CallID: genesysConv, AccountID: genesysOrg, Params: map[string]string{
		"pipeline": "loud", "intent": "billing", "from": "+1-555-555-1234", "to": "+1-800-555-6789", "language": "en-US"}}
	if in.Kind != transport.KindStart || !reflect.DeepEqual(in.Start, want) {
		t.Fatalf("open decoded to %v %+v, want %+v", in.Kind, in.Start, want)
	}
	// The mono offer of the external channel is the one chosen.
	opened := genesysServerMsg("opened", 1, 1, `{"startPaused":false,"media":[{"type":"audio","format":"PCMU","channels":["external"],"rate":8000}]}`)
	if in.ReplyType != transport.Text || string(in.Reply) != opened {
		t.Fatalf("open answered %q\nwant          %q", in.Reply, opened)
	}
	if s.Format() != codec.Telephony {
		t.Fatalf("format %v, want 8 kHz μ-law", s.Format())
	}

	// 200 ms frames, byte for byte both ways.
	binaryFramesBothWays(t, s, tone(0, 4800), 1600)

	steps := []struct {
		msg   string
		want  transport.Inbound
		reply string
	}{
		{genesysMsg("ping", 2, 1, "PT0.6S", `{"rtt":"PT0.0123S"}`), transport.Inbound{}, genesysServerMsg("pong", 2, 2, `{}`)},
		{genesysMsg("dtmf", 3, 2, "PT0.8S", `{"digit":"5"}`), transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}, ""},
		{genesysMsg("playback_started", 4, 2, "PT1S", `{}`), transport.Inbound{}, ""},
		{genesysMsg("playback_completed", 5, 2, "PT1.2S", `{}`), transport.Inbound{}, ""},
		{genesysMsg("paused", 6, 2, "PT1.4S", `{}`), transport.Inbound{Kind: transport.KindPause}, ""},
		{genesysMsg("resumed", 7, 2, "PT9.4S", `{"start":"PT1.4S","discarded":"PT8S"}`), transport.Inbound{Kind: transport.KindResume}, ""},
		{genesysMsg("update", 8, 2, "PT9.6S", `{"language":"es-ES"}`), transport.Inbound{}, ""},
		{genesysMsg("error", 9, 2, "PT9.6S", `{"code":429,"message":"Too many requests","retryAfter":"PT2S"}`), transport.Inbound{Kind: transport.KindError, Text: "429: Too many requests"}, ""},
	}
	for i, st := range steps {
		if err := s.Decode(transport.Text, []byte(st.msg), &in); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		reply := string(in.Reply)
		in.Reply, in.ReplyType = nil, 0
		if !reflect.DeepEqual(in, st.want) || reply != st.reply {
			t.Errorf("message %d decoded to %+v answering %q, want %+v answering %q", i, in, reply, st.want, st.reply)
		}
	}
	// The barge-in takes the next seq and echoes the last client seq.
	if got, want := sentOf(s.Clear()), (sent{transport.Text, genesysServerMsg("event", 3, 9, `{"entities":[{"type":"barge_in","data":{}}]}`)}); got != want {
		t.Errorf("clear: %+v\nwant   %+v", got, want)
	}
	if third(s.Mark("m")) || third(s.Event("vad", "speech_start", nil, 0)) {
		t.Error("AudioHook has no marks and no place for plugin events")
	}
	if err := s.Decode(transport.Text, []byte(genesysMsg("close", 10, 3, "PT9.8S", `{"reason":"end"}`)), &in); err != nil {
		t.Fatal(err)
	}
	if closed := genesysServerMsg("closed", 4, 10, `{}`); in.Kind != transport.KindStop || string(in.Reply) != closed {
		t.Errorf("close decoded to %v answering %q, want stop answering %q", in.Kind, in.Reply, closed)
	}
	if third(s.Clear()) || third(s.Hangup()) {
		t.Error("a message rendered after closed")
	}
	wantProtocolError(t, s.Decode(transport.Binary, tone(0, 160), &in), "genesys", "genesys: audio after close")
}

// A stereo offer interleaves its channels in the offer's order: the host
// takes the external one out of each frame, in either format.
func TestGenesysStereo(t *testing.T) {
	ext, internal := tone(0, 160), tone(40, 160)
	interleave := func(a, b []byte, sb int) []byte {
		var out []byte
		for i := 0; i < len(a); i += sb {
			out = append(append(out, a[i:i+sb]...), b[i:i+sb]...)
		}
		return out
	}
	l16ext, l16int := pcmOf(ext), pcmOf(internal)
	for _, tt := range []struct {
		offer string
		frame []byte
		want  []byte
		f     codec.Format
	}{
		{`[{"type":"audio","format":"PCMU","channels":["external","internal"],"rate":8000}]`, interleave(ext, internal, 1), ext, codec.Telephony},
		{`[{"type":"audio","format":"PCMU","channels":["internal","external"],"rate":8000}]`, interleave(internal, ext, 1), ext, codec.Telephony},
		{`[{"type":"audio","format":"L16","channels":["external","internal"],"rate":8000}]`, interleave(l16ext, l16int, 2), l16ext, codec.Format{Encoding: codec.L16, Rate: 8000}},
	} {
		s := genesysOpened(t, tt.offer)
		var in transport.Inbound
		if err := s.Decode(transport.Binary, tt.frame, &in); err != nil || !bytes.Equal(in.Audio, tt.want) || s.Format() != tt.f {
			t.Errorf("%s: decoded %d bytes at %v (%v), want the external channel", tt.offer, len(in.Audio), s.Format(), err)
		}
		// What the host sends is mono.
		if _, out := s.Audio(tt.want); !bytes.Equal(out, tt.want) {
			t.Errorf("%s: the host's audio changed", tt.offer)
		}
	}
}

// pcmOf decodes μ-law to L16.
func pcmOf(ulaw []byte) []byte {
	pcm := make([]byte, 2*len(ulaw))
	codec.DecodeUlaw(pcm, ulaw)
	return pcm
}

// The host chooses a mono offer of the external channel, PCMU before L16,
// before a stereo one, and refuses a call it can take none of.
func TestGenesysMediaChoice(t *testing.T) {
	pcmu := func(ch string) string { return `{"type":"audio","format":"PCMU","channels":` + ch + `,"rate":8000}` }
	l16 := func(ch string) string { return `{"type":"audio","format":"L16","channels":` + ch + `,"rate":8000}` }
	for _, tt := range []struct {
		offers, want string // want "" is a refusal
	}{
		{"[" + pcmu(`["external","internal"]`) + "," + l16(`["external"]`) + "," + pcmu(`["external"]`) + "]", pcmu(`["external"]`)},
		{"[" + pcmu(`["external","internal"]`) + "," + l16(`["external"]`) + "]", l16(`["external"]`)},
		{"[" + l16(`["internal","external"]`) + "," + pcmu(`["internal","external"]`) + "]", pcmu(`["internal","external"]`)},
		{"[" + pcmu(`["internal"]`) + "]", ""},
		{"[" + pcmu(`["external","external"]`) + "]", ""},
		{`[{"type":"audio","format":"PCMU","channels":["external"],"rate":16000}]`, ""},
		{`[{"type":"audio","format":"opus","channels":["external"],"rate":8000}]`, ""},
		{`[]`, ""},
	} {
		s := session(transport.Genesys())
		var in transport.Inbound
		err := s.Decode(transport.Text, []byte(genesysOpenMsg(tt.offers)), &in)
		if tt.want == "" {
			perr := wantProtocolError(t, err, "genesys", "genesys: open offers no media voxhost takes: it takes PCMU or L16 audio at 8000 Hz with the external channel")
			if !perr.Unsupported {
				t.Errorf("%s: refusal not marked unsupported", tt.offers)
			}
			// Genesys hears why, in a disconnect.
			if got := sentOf(s.Hangup()); !strings.Contains(got.msg, `"type":"disconnect","seq":1,"clientseq":1`) || !strings.Contains(got.msg, `"reason":"error","info":"open offers no media`) {
				t.Errorf("%s: hangup %s", tt.offers, got.msg)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.offers, err)
		}
		if wantMedia := `"media":[` + tt.want + `]}}`; !strings.HasSuffix(string(in.Reply), wantMedia) {
			t.Errorf("%s: opened %s, want %s", tt.offers, in.Reply, wantMedia)
		}
	}
}

// The host ends a session with disconnect: completed, or error saying
// what was wrong after a message it refused; once.
func TestGenesysHangup(t *testing.T) {
	s := genesysOpened(t, genesysOffers)
	if got, want := sentOf(s.Hangup()), (sent{transport.Text, genesysServerMsg("disconnect", 2, 1, `{"reason":"completed"}`)}); got != want {
		t.Errorf("hangup: %+v\nwant    %+v", got, want)
	}
	if third(s.Hangup()) || third(s.Clear()) {
		t.Error("a second disconnect, or a barge-in after it")
	}
	s = genesysOpened(t, genesysOffers)
	var in transport.Inbound
	wantProtocolError(t, s.Decode(transport.Text, []byte(genesysMsg("ping", 3, 1, "PT1S", `{}`)), &in), "genesys",
		`genesys: "ping" message with seq 3 after 1: the client numbers its messages 1, 2, 3, ...`)
	want := genesysServerMsg("disconnect", 2, 1, `{"reason":"error","info":"\"ping\" message with seq 3 after 1: the client numbers its messages 1, 2, 3, ..."}`)
	if got := sentOf(s.Hangup()); got.msg != want {
		t.Errorf("hangup after a bad message: %s\nwant %s", got.msg, want)
	}
}

func TestGenesysMalformed(t *testing.T) {
	opened := func(t *testing.T) decoder { return genesysOpened(t, genesysOffers) }
	stereo := func(t *testing.T) decoder {
		return genesysOpened(t, `[{"type":"audio","format":"L16","channels":["external","internal"],"rate":8000}]`)
	}
	fresh := func(*testing.T) decoder { return session(transport.Genesys()) }
	long := strings.Repeat("x", transport.MaxParamValueBytes+1)
	open := genesysOpenMsg(genesysOffers)
	checkMalformed(t, "genesys", []malformed{
		{"audio first", fresh, transport.Binary, string(tone(0, 160)), "genesys: audio before the session is open", false, false},
		{"empty audio", opened, transport.Binary, "", "genesys: empty audio frame", false, false},
		{"long audio", opened, transport.Binary, string(tone(0, 1608)), "genesys: audio frame of 1608 bytes exceeds the limit of 1600", false, false},
		{"odd stereo", stereo, transport.Binary, "abc", "genesys: stereo audio of 3 bytes is not whole 4-byte sample pairs", false, false},
		{"long stereo", stereo, transport.Binary, string(make([]byte, 6416)), "genesys: audio frame of 3208 bytes exceeds the limit of 3200", false, false},
		{"not json", fresh, transport.Text, `{"version":"2",`, "genesys: bad message: unexpected end of JSON input", false, false},
		{"no version", fresh, transport.Text, `{"type":"open","seq":1}`, `genesys: message without a "version"`, false, false},
		{"version", fresh, transport.Text, strings.Replace(open, `"version": "2"`, `"version": "1"`, 1), `genesys: version "1"; voxhost speaks AudioHook version 2`, true, false},
		{"no type", fresh, transport.Text, `{"version":"2","seq":1}`, `genesys: message without a "type"`, false, false},
		{"no seq", fresh, transport.Text, `{"version":"2","type":"open"}`, `genesys: "open" message without a "seq"`, false, false},
		{"seq not a number", fresh, transport.Text, `{"version":"2","type":"open","seq":"1"}`, "genesys: bad message: json: cannot unmarshal string into Go struct field genesysMessage.seq of type int64", false, false},
		{"first seq", fresh, transport.Text, strings.Replace(open, `"seq": 1`, `"seq": 2`, 1), `genesys: "open" message with seq 2 after 0: the client numbers its messages 1, 2, 3, ...`, false, false},
		{"serverseq", opened, transport.Text, genesysMsg("ping", 2, 5, "PT1S", `{}`), `genesys: "ping" message with serverseq 5; voxhost has sent 1 messages`, false, false},
		{"position", opened, transport.Text, genesysMsg("ping", 2, 1, "1.5", `{}`), `genesys: "ping" message with position "1.5", not a duration such as PT1.5S`, false, false},
		{"before open", fresh, transport.Text, genesysMsg("ping", 1, 0, "PT0S", `{}`), `genesys: "ping" message before open: Genesys opens the session first`, false, false},
		{"id", opened, transport.Text, strings.Replace(genesysMsg("ping", 2, 1, "PT1S", `{}`), genesysID, genesysOrg, 1), `genesys: "ping" message with id "d7934305-0972-4844-938e-9060eef7"..., not the session's "` + genesysID + `"`, false, false},
		{"second open", opened, transport.Text, strings.Replace(open, `"seq": 1`, `"seq": 2`, 1), "genesys: a second open on one session", false, false},
		{"open without id", fresh, transport.Text, strings.Replace(open, genesysID, "", 1), `genesys: open without an "id"`, false, false},
		{"open id", fresh, transport.Text, strings.Replace(open, genesysID, "a b", 1), `genesys: id has ' ' at byte 1; ids are ASCII letters, digits and - _ . :`, false, true},
		{"open without parameters", fresh, transport.Text, `{"version":"2","type":"open","seq":1,"serverseq":0,"id":"` + genesysID + `","position":"PT0S"}`, `genesys: "open" message without "parameters"`, false, false},
		{"open media", fresh, transport.Text, strings.Replace(open, `"media": [`, `"media": 5, "x": [`, 1), `genesys: bad "open" parameters: json: cannot unmarshal number into Go struct field genesysOpen.media of type []transport.genesysMedia`, false, false},
		{"long variable", fresh, transport.Text, strings.Replace(open, `"intent": "billing"`, `"intent": "`+long+`"`, 1), `genesys: open inputVariables["intent"] is 513 bytes, longer than 512`, false, true},
		{"conversation id", fresh, transport.Text, strings.Replace(open, genesysConv, strings.Repeat("9", 65), 1), "genesys: conversationId of 65 bytes is longer than 64", false, true},
		{"dtmf", opened, transport.Text, genesysMsg("dtmf", 2, 1, "PT1S", `{"digit":"12"}`), `genesys: dtmf digit "12" is not one of 0-9 * # A-D`, false, false},
		{"dtmf without parameters", opened, transport.Text, `{"version":"2","id":"` + genesysID + `","type":"dtmf","seq":2,"serverseq":1,"position":"PT1S"}`, `genesys: "dtmf" message without "parameters"`, false, false},
		{"type", opened, transport.MessageType(9), "x", "genesys: message of unknown WebSocket type 9", false, false},
	})
}

// genesysOpenSeen is the dialect's open as the server it dials reads it.
type genesysOpenSeen struct {
	Version    string `json:"version"`
	Type       string `json:"type"`
	Seq        int    `json:"seq"`
	ServerSeq  int    `json:"serverseq"`
	ID         string `json:"id"`
	Position   string `json:"position"`
	Parameters struct {
		OrganizationID string `json:"organizationId"`
		ConversationID string `json:"conversationId"`
		Participant    struct {
			ID, Ani, AniName, Dnis string
		} `json:"participant"`
		Media []struct {
			Type     string   `json:"type"`
			Format   string   `json:"format"`
			Channels []string `json:"channels"`
			Rate     int      `json:"rate"`
		} `json:"media"`
		Language       string            `json:"language"`
		InputVariables map[string]string `json:"inputVariables"`
	} `json:"parameters"`
}

// TestGenesysDialect: the genesys dialect says to a bot what Genesys'
// Audio Connector says to an AudioHook server, numbered as it numbers
// them, and reads the server's messages.
func TestGenesysDialect(t *testing.T) {
	d, err := transport.LookupDialect("genesys")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []codec.Format{codec.Telephony, {Encoding: codec.L16, Rate: 8000}} {
		if err := d.CheckFormat(f); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
	if err := d.CheckFormat(vonage16k); err == nil || err.Error() != "the genesys dialect carries PCMU (μ-law) or L16 at 8000 Hz, not 16 kHz L16" {
		t.Errorf("16 kHz: %v", err)
	}
	call := transport.CallInfo{CallID: genesysConv, StreamID: "MZ18ad3ab5a668481ce02b83e7395059f0", AccountID: "AC1",
		Params: map[string]string{"from": "+15551234", "to": "+18005556789", "language": "en-US", "intent": "billing"}}
	b := d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: maxAudio, Call: call})
	got := opened(t, b)
	if len(got) != 1 || got[0].typ != transport.Text {
		t.Fatalf("Open sent %+v, want open", got)
	}
	var o genesysOpenSeen
	if err := json.Unmarshal([]byte(got[0].msg), &o); err != nil {
		t.Fatalf("%v in %s", err, got[0].msg)
	}
	p := o.Parameters
	// The call's ids that are UUIDs go as they are, others as UUIDs made
	// from them; the same call gets the same ones.
	uuid := func(s string) bool { return len(s) == 36 && strings.Count(s, "-") == 4 }
	if o.Version != "2" || o.Type != "open" || o.Seq != 1 || o.ServerSeq != 0 || o.Position != "PT0.000S" || !uuid(o.ID) ||
		p.ConversationID != genesysConv || !uuid(p.OrganizationID) || !uuid(p.Participant.ID) ||
		p.Participant.Ani != "+15551234" || p.Participant.Dnis != "+18005556789" || p.Language != "en-US" ||
		!reflect.DeepEqual(p.InputVariables, map[string]string{"language": "en-US", "intent": "billing"}) ||
		len(p.Media) != 1 || p.Media[0].Format != "PCMU" || p.Media[0].Rate != 8000 || !reflect.DeepEqual(p.Media[0].Channels, []string{"external"}) {
		t.Errorf("open: %s", got[0].msg)
	}
	if again := opened(t, d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: maxAudio, Call: call})); again[0] != got[0] {
		t.Errorf("a second session of the call opened with %s", again[0].msg)
	}

	frame := tone(0, 1600)
	if typ, out := b.Audio(frame); typ != transport.Binary || !bytes.Equal(out, frame) {
		t.Errorf("audio rendered as %v of %d bytes", typ, len(out))
	}
	// The server's opened comes: serverseq follows it, position the audio.
	decodeBot(t, b, transport.Text, []byte(fmt.Sprintf(`{"version":"2","type":"opened","seq":1,"clientseq":1,"id":%q,"parameters":{"startPaused":false,"media":[{"type":"audio","format":"PCMU","channels":["external"],"rate":8000}]}}`, o.ID)))
	if got, want := sentOf(b.DTMF('7')), fmt.Sprintf(`{"version":"2","type":"dtmf","seq":2,"serverseq":1,"id":%q,"position":"PT0.200S","parameters":{"digit":"7"}}`, o.ID); got.msg != want {
		t.Errorf("dtmf: %s\nwant  %s", got.msg, want)
	}
	if third(b.MarkPlayed("m")) || third(b.Event("vad", "speech_start", nil, 0)) || third(b.DTMF('x')) {
		t.Error("AudioHook's client has no marks or plugin events, and x is no key")
	}
	send, sentMsgs := collect()
	if err := b.Interrupted(100, false, send); err != nil || len(*sentMsgs) != 0 {
		t.Errorf("a barge-in sent %v (%v)", *sentMsgs, err)
	}

	server := func(typ string, seq, clientseq int, params string) string {
		return fmt.Sprintf(`{"version":"2","type":%q,"seq":%d,"clientseq":%d,"id":%q,"parameters":%s}`, typ, seq, clientseq, o.ID, params)
	}
	decodeSteps(t, b, []decodeStep{
		{transport.Binary, string(frame[:3]), transport.Inbound{Kind: transport.KindAudio, Audio: frame[:3]}},
		{transport.Text, server("event", 2, 2, `{"entities":[{"type":"bot_turn_response","data":{"disposition":"match","text":"hi"}}]}`), transport.Inbound{}},
		{transport.Text, server("event", 3, 2, `{"entities":[{"type":"barge_in","data":{}}]}`), transport.Inbound{Kind: transport.KindClear}},
		{transport.Text, server("pong", 4, 2, `{}`), transport.Inbound{}},
		{transport.Text, server("pause", 5, 2, `{}`), transport.Inbound{}},
		{transport.Text, `{"version":"2","type":"error","seq":6,"clientseq":2,"id":"x","position":"PT1S","parameters":{"code":500,"message":"bot crashed","retryable":false}}`, transport.Inbound{Kind: transport.KindError, Text: "500: bot crashed"}},
		{transport.Text, server("disconnect", 7, 2, `{"reason":"completed","outputVariables":{"intent":"billing"}}`), transport.Inbound{Kind: transport.KindStop}},
	})
	if got, want := sentOf(b.Stop()), fmt.Sprintf(`{"version":"2","type":"close","seq":3,"serverseq":7,"id":%q,"position":"PT0.200S","parameters":{"reason":"end"}}`, o.ID); got.msg != want {
		t.Errorf("stop: %s\nwant  %s", got.msg, want)
	}

	newGenesysBot := func(t *testing.T) transport.BotSession { return newBot(t, "genesys", codec.Telephony, nil) }
	decodeErrors(t, "genesys", newGenesysBot, []decodeError{
		{"empty audio", transport.Binary, "", "genesys: empty audio frame", false},
		{"long audio", transport.Binary, string(make([]byte, maxAudio+1)), "genesys: audio frame of 1601 bytes exceeds the limit of 1600", false},
		{"not json", transport.Text, `{`, "genesys: bad message: unexpected end of JSON input", false},
		{"seq", transport.Text, `{"version":"2","type":"opened","seq":2,"clientseq":0,"id":"x","parameters":{}}`, `genesys: "opened" message with seq 2 after 0: the server numbers its messages 1, 2, 3, ...`, false},
		{"clientseq", transport.Text, `{"version":"2","type":"opened","seq":1,"clientseq":1,"id":"x","parameters":{}}`, `genesys: "opened" message with clientseq 1; voxhost has sent 0 messages`, false},
		{"event without parameters", transport.Text, `{"version":"2","type":"event","seq":1,"clientseq":0,"id":"x"}`, `genesys: "event" message without "parameters"`, false},
	})
}

// TestGenesysRoundTrip: the dialect's open, audio, keys and close decode
// in the server role as Genesys' own, with the server's answers decoding
// in the dialect, every counter in step.
func TestGenesysRoundTrip(t *testing.T) {
	b := newBot(t, "genesys", codec.Telephony, nil)
	srv := session(transport.Genesys())
	var in transport.Inbound
	toServer := func(m sent) transport.Inbound {
		t.Helper()
		if err := srv.Decode(m.typ, []byte(m.msg), &in); err != nil {
			t.Fatalf("server: %v\n%s", err, m.msg)
		}
		if in.Reply != nil {
			decodeBot(t, b, in.ReplyType, in.Reply)
		}
		return in
	}
	open := opened(t, b)[0]
	var o genesysOpenSeen
	if err := json.Unmarshal([]byte(open.msg), &o); err != nil {
		t.Fatal(err)
	}
	if got := toServer(open); got.Kind != transport.KindStart || got.Start.StreamID != o.ID || got.Start.CallID != o.Parameters.ConversationID ||
		!reflect.DeepEqual(got.Start.Params, testCall.Params) {
		t.Fatalf("open decoded to %v %+v", got.Kind, got.Start)
	}
	for i := range 3 {
		frame := tone(1600*i, 1600)
		if got := toServer(audioSent(b.Audio(frame))); got.Kind != transport.KindAudio || !bytes.Equal(got.Audio, frame) {
			t.Errorf("frame %d decoded to %v", i, got.Kind)
		}
		if typ, msg := srv.Audio(frame); !bytes.Equal(decodeBot(t, b, typ, msg).Audio, frame) {
			t.Errorf("the server's frame %d did not reach the bot", i)
		}
	}
	for _, c := range []byte("0123456789*#ABCD") {
		if got := toServer(sentOf(b.DTMF(c))); got.Kind != transport.KindDTMF || got.Digit != c {
			t.Errorf("dtmf %c decoded to %v %q", c, got.Kind, got.Digit)
		}
	}
	typ, msg, _ := srv.Clear()
	if got := decodeBot(t, b, typ, msg); got.Kind != transport.KindClear {
		t.Errorf("the server's barge-in decoded to %v", got.Kind)
	}
	if got := toServer(sentOf(b.Stop())); got.Kind != transport.KindStop {
		t.Errorf("close decoded to %v", got.Kind)
	}

	// A host that hangs up first: the bot hears disconnect.
	b = newBot(t, "genesys", codec.Telephony, nil)
	srv = session(transport.Genesys())
	toServer(opened(t, b)[0])
	typ, msg, _ = srv.Hangup()
	if got := decodeBot(t, b, typ, msg); got.Kind != transport.KindStop {
		t.Errorf("disconnect decoded to %v", got.Kind)
	}
}

func TestGenesysAudioPathDoesNotAllocate(t *testing.T) {
	mono := genesysOpened(t, genesysOffers)
	stereo := genesysOpened(t, `[{"type":"audio","format":"PCMU","channels":["external","internal"],"rate":8000}]`)
	b := newBot(t, "genesys", codec.Telephony, nil)
	frame := tone(0, 1600)
	var in transport.Inbound
	decode := func(s decoder, msg []byte) func() {
		return func() {
			if err := s.Decode(transport.Binary, msg, &in); err != nil || in.Kind != transport.KindAudio {
				t.Fatal(in.Kind, err)
			}
		}
	}
	for _, tt := range []struct {
		name string
		run  func()
	}{
		{"decode audio", decode(mono, frame)},
		{"decode stereo audio", decode(stereo, frame)},
		{"render audio", func() { mono.Audio(frame) }},
		{"bot render audio", func() { b.Audio(frame) }},
		{"bot decode audio", decode(b, frame)},
	} {
		if n := testing.AllocsPerRun(200, tt.run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", tt.name, n)
		}
	}
}

// FuzzGenesysDecode checks the server role's decoder on an open session
// with a stereo offer: audio within its rules, errors that are
// *ProtocolErrors, and answers and later messages that are valid JSON
// counting seq in step.
func FuzzGenesysDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, binary bool, msg []byte) {
		s := genesysOpened(t, `[{"type":"audio","format":"PCMU","channels":["external","internal"],"rate":8000}]`)
		var in transport.Inbound
		if binary {
			err := s.Decode(transport.Binary, msg, &in)
			ok := len(msg) > 0 && len(msg) <= 3200 && len(msg)%16 == 0
			if ok != (err == nil) {
				t.Fatalf("%d bytes of stereo audio: %v", len(msg), err)
			}
			for i := range in.Audio {
				if in.Audio[i] != msg[2*i] {
					t.Fatalf("sample %d is not the external channel's", i)
				}
			}
			return
		}
		err := s.Decode(transport.Text, msg, &in)
		checkBotDecodeError(t, err, msg, &in)
		seq := 1
		if in.Reply != nil {
			seq++
			checkGenesysServerMsg(t, in.Reply, seq)
		}
		switch in.Kind {
		case transport.KindIgnore, transport.KindStop, transport.KindPause, transport.KindResume:
		case transport.KindDTMF:
			if !strings.ContainsRune("0123456789*#ABCD", rune(in.Digit)) {
				t.Fatalf("dtmf %q", in.Digit)
			}
		case transport.KindError:
			if len(in.Text) > 303 {
				t.Fatalf("error text of %d bytes", len(in.Text))
			}
		default:
			t.Fatalf("decoded as %v", in.Kind)
		}
		for _, render := range []func() (transport.MessageType, []byte, bool){s.Clear, s.Hangup} {
			if _, out, ok := render(); ok {
				seq++
				checkGenesysServerMsg(t, out, seq)
			}
		}
	})
}

// checkGenesysServerMsg fails the test unless msg is a server message of
// seq.
func checkGenesysServerMsg(t *testing.T, msg []byte, seq int) {
	t.Helper()
	var m struct {
		Version string `json:"version"`
		Seq     int    `json:"seq"`
		ID      string `json:"id"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || m.Version != "2" || m.Seq != seq || m.ID != genesysID {
		t.Fatalf("sent %s, want a message of seq %d (%v)", msg, seq, err)
	}
}

// FuzzGenesysBotDecode checks the dialect's decoder: a bot's audio within
// its bounds, errors that are *ProtocolErrors, and a clear only for a
// barge_in event.
func FuzzGenesysBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, binary bool, msg []byte) {
		b := newBot(t, "genesys", codec.Telephony, nil)
		opened(t, b)
		var in transport.Inbound
		if binary {
			err := b.Decode(transport.Binary, msg, &in)
			if ok := len(msg) > 0 && len(msg) <= maxAudio; ok != (err == nil) {
				t.Fatalf("%d bytes of audio: %v", len(msg), err)
			}
			return
		}
		err := b.Decode(transport.Text, msg, &in)
		checkBotDecodeError(t, err, msg, &in)
		var m struct {
			Type       string `json:"type"`
			Parameters struct {
				Entities []struct {
					Type string `json:"type"`
				} `json:"entities"`
			} `json:"parameters"`
		}
		_ = json.Unmarshal(msg, &m)
		switch in.Kind {
		case transport.KindIgnore, transport.KindError:
		case transport.KindClear:
			if m.Type != "event" || !strings.Contains(fmt.Sprint(m.Parameters.Entities), "barge_in") {
				t.Fatalf("clear from %s", msg)
			}
		case transport.KindStop:
			if m.Type != "disconnect" {
				t.Fatalf("stop from %s", msg)
			}
		default:
			t.Fatalf("a bot's message decoded as %v", in.Kind)
		}
	})
}
