package transport_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// Messages as asterisk/documentation's
// docs/Configuration/Channel-Drivers/WebSocket.md shows them:
//
//	"Example plain-text MEDIA_START event"
//	MEDIA_START connection_id:e226e283-c90a-4ea9-9e37-389000b9ef47 channel:WebSocket/connectionid channel_id:pbx1-123456789.999 format:ulaw optimal_frame_size:160 ptime:20
//
//	"Example MEDIA_START event"
//	{
//	    "event": "MEDIA_START",
//	    "connection_id": "e226e283-c90a-4ea9-9e37-389000b9ef47",
//	    "channel": "WebSocket/connectionid",
//	    ...
//	    "channel_variables": {
//	        "SOME_CHANNEL_VARIABLE": "some value",
//	        ...
//
// "For ulaw/alaw for instance, Asterisk will send a 160 byte packet every
// 20ms." The page names the other events' parameters but shows no example;
// their exact text is chan_websocket.c's (asterisk/asterisk
// channels/chan_websocket.c): "DTMF_END digit:%c channel_id:%s", a bare
// "MEDIA_XOFF", "MEDIA_MARK_PROCESSED <id>", and in JSON
// {"event":"DTMF_END","channel_id":…,"digit":"5"}.
const (
	asteriskConnID     = "e226e283-c90a-4ea9-9e37-389000b9ef47"
	asteriskChannelID  = "pbx1-123456789.999"
	asteriskPlainStart = "MEDIA_START connection_id:" + asteriskConnID + " channel:WebSocket/connectionid channel_id:" + asteriskChannelID +
		" format:ulaw optimal_frame_size:160 ptime:20"
	asteriskJSONStart = `{
    "event": "MEDIA_START",
    "connection_id": "e226e283-c90a-4ea9-9e37-389000b9ef47",
    "channel": "WebSocket/connectionid",
    "channel_id": "pbx1-123456789.999",
    "format": "ulaw",
    "optimal_frame_size": 160,
    "ptime": 20,
    "channel_variables": {
        "SOME_CHANNEL_VARIABLE": "some value",
        "ANOTHER_CHANNEL_VARIABLE": "some other value",
        "MEDIA_WEBSOCKET_CONNECTION_ID": "e226e283-c90a-4ea9-9e37-389000b9ef47",
        "MEDIA_WEBSOCKET_OPTIMAL_FRAME_SIZE": "160"
    }
}`
)

// asteriskSession makes an Asterisk session for frames of up to 200 ms,
// with the query the connection came with.
func asteriskSession(t testing.TB, query string) transport.Session {
	t.Helper()
	q, _ := url.ParseQuery(query)
	s, err := transport.Asterisk().NewSession(transport.SessionConfig{MaxFrameMs: 200, Query: q})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// asteriskStarted is a session that decoded start.
func asteriskStarted(t testing.TB, start string) transport.Session {
	t.Helper()
	s := asteriskSession(t, "")
	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(start), &in); err != nil || in.Kind != transport.KindStart {
		t.Fatalf("%s: %v %v", start, in.Kind, err)
	}
	return s
}

func TestAsteriskProtocol(t *testing.T) {
	p, err := transport.LookupProtocol("asterisk")
	if err != nil {
		t.Fatal(err)
	}
	if p.Path() != "/asterisk" || p.StartsOnConnect() || p.Buffers() {
		t.Fatalf("path %q, starts on connect %v, buffers %v; want /asterisk, false, false (the host paces Asterisk)", p.Path(), p.StartsOnConnect(), p.Buffers())
	}
}

func TestAsteriskPlainTextConversation(t *testing.T) {
	s := asteriskSession(t, "")
	if f := s.Format(); f != codec.Telephony {
		t.Fatalf("format before MEDIA_START %v, want μ-law", f)
	}
	frames := [][]byte{tone(0, 160), tone(160, 160)}
	decodeSteps(t, s, []decodeStep{
		{transport.Text, asteriskPlainStart, transport.Inbound{Kind: transport.KindStart, Start: &transport.Start{StreamID: asteriskConnID, CallID: asteriskChannelID}}},
		{transport.Binary, string(frames[0]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[0]}},
		{transport.Text, "DTMF_END digit:5 channel_id:" + asteriskChannelID, transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}},
		{transport.Text, "DTMF_END digit:#", transport.Inbound{Kind: transport.KindDTMF, Digit: '#'}}, // before channel_id came
		{transport.Binary, string(frames[1]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[1]}},
		{transport.Text, "MEDIA_XOFF", transport.Inbound{Kind: transport.KindPause}},
		{transport.Text, "MEDIA_XON", transport.Inbound{Kind: transport.KindResume}},
		{transport.Text, "MEDIA_MARK_PROCESSED reply-1", transport.Inbound{Kind: transport.KindMark, Mark: "reply-1"}},
		{transport.Text, "MEDIA_MARK_PROCESSED", transport.Inbound{Kind: transport.KindMark}},
		{transport.Text, "STATUS channel_id:" + asteriskChannelID + " queue_length:0 xon_level:800 xoff_level:900 queue_full:false bulk_media:false media_paused:false", transport.Inbound{}},
		{transport.Text, "QUEUE_DRAINED", transport.Inbound{}},
		{transport.Text, "MEDIA_BUFFERING_COMPLETED 61ea9311-d501-46e5-8825-017b342b39f2", transport.Inbound{}},
		{transport.Text, "ERROR channel_id:" + asteriskChannelID + " error_text:MARK_MEDIA not supported in passthrough mode", transport.Inbound{Kind: transport.KindError, Text: "MARK_MEDIA not supported in passthrough mode"}},
		{transport.Text, "SOME_FUTURE_EVENT a:b", transport.Inbound{}},
	})
	if f := s.Format(); f != codec.Telephony {
		t.Fatalf("format %v, want μ-law from format:ulaw", f)
	}
	// Replies in the plain-text form MEDIA_START came in.
	for _, tt := range []struct {
		name string
		typ  transport.MessageType
		msg  []byte
		ok   bool
		want string
	}{
		{"mark", transport.Text, nil, true, "MARK_MEDIA reply-1"},
		{"clear", transport.Text, nil, true, "FLUSH_MEDIA"},
		{"hangup", transport.Text, nil, true, "HANGUP"},
	} {
		var typ transport.MessageType
		var msg []byte
		var ok bool
		switch tt.name {
		case "mark":
			typ, msg, ok = s.Mark("reply-1")
		case "clear":
			typ, msg, ok = s.Clear()
		case "hangup":
			typ, msg, ok = s.Hangup()
		}
		if typ != tt.typ || !ok || string(msg) != tt.want {
			t.Errorf("%s: %v %q %v, want text %q", tt.name, typ, msg, ok, tt.want)
		}
	}
	if _, _, ok := s.Event("vad", "speech_start", nil, 0); ok {
		t.Error("Event rendered a message; Asterisk has none for it")
	}
	frame := tone(0, 160)
	if typ, msg := s.Audio(frame); typ != transport.Binary || !bytes.Equal(msg, frame) {
		t.Errorf("Audio: %v of %d bytes, want the frame as a binary message", typ, len(msg))
	}
}

func TestAsteriskJSONConversation(t *testing.T) {
	s := asteriskSession(t, "")
	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(asteriskJSONStart), &in); err != nil {
		t.Fatal(err)
	}
	want := &transport.Start{StreamID: asteriskConnID, CallID: asteriskChannelID,
		Params: map[string]string{"SOME_CHANNEL_VARIABLE": "some value", "ANOTHER_CHANNEL_VARIABLE": "some other value"}}
	if in.Kind != transport.KindStart || in.Reply != nil || !jsonSame(in.Start, want) {
		t.Fatalf("MEDIA_START decoded to %v %+v (reply %q), want %+v without MEDIA_WEBSOCKET_*", in.Kind, in.Start, in.Reply, want)
	}
	frame := tone(0, 160)
	decodeSteps(t, s, []decodeStep{
		{transport.Binary, string(frame), transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
		{transport.Text, `{"event":"DTMF_END","channel_id":"pbx1-123456789.999","digit":"7"}`, transport.Inbound{Kind: transport.KindDTMF, Digit: '7'}},
		{transport.Text, `{"event":"MEDIA_XOFF","channel_id":"pbx1-123456789.999"}`, transport.Inbound{Kind: transport.KindPause}},
		{transport.Text, `{"event":"MEDIA_XON","channel_id":"pbx1-123456789.999"}`, transport.Inbound{Kind: transport.KindResume}},
		{transport.Text, `{"event":"MEDIA_MARK_PROCESSED","channel_id":"pbx1-123456789.999","correlation_id":"turn \"2\" ✓"}`, transport.Inbound{Kind: transport.KindMark, Mark: `turn "2" ✓`}},
		{transport.Text, `{"event":"STATUS","channel_id":"pbx1-123456789.999","queue_length":3,"xon_level":800,"xoff_level":900,"queue_full":false,"bulk_media":false,"media_paused":false}`, transport.Inbound{}},
		{transport.Text, `{"event":"QUEUE_DRAINED","channel_id":"pbx1-123456789.999"}`, transport.Inbound{}},
		{transport.Text, `{"event":"ERROR","channel_id":"pbx1-123456789.999","error_text":"Unable to parse JSON command"}`, transport.Inbound{Kind: transport.KindError, Text: "Unable to parse JSON command"}},
	})
	for name, r := range map[string]func() (transport.MessageType, []byte, bool){
		`{"command":"MARK_MEDIA","correlation_id":"turn \"2\" ✓"}`: func() (transport.MessageType, []byte, bool) { return s.Mark(`turn "2" ✓`) },
		`{"command":"FLUSH_MEDIA"}`:                                s.Clear,
		`{"command":"HANGUP"}`:                                     s.Hangup,
	} {
		if typ, msg, ok := r(); typ != transport.Text || !ok || string(msg) != name {
			t.Errorf("rendered %v %s %v, want %s", typ, msg, ok, name)
		}
	}
}

// jsonSame compares two values by their JSON, so that a nil and an empty
// map differ only where it matters here.
func jsonSame(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// The channel's format sets the session's, for every format the host
// carries; others are refused as unsupported, naming the ones it takes.
func TestAsteriskFormats(t *testing.T) {
	for _, tt := range []struct {
		name  string
		frame int
		want  codec.Format
	}{
		{"ulaw", 160, codec.Telephony},
		{"alaw", 160, codec.Format{Encoding: codec.Alaw, Rate: 8000}},
		{"slin", 320, codec.Format{Encoding: codec.L16, Rate: 8000}},
		{"slin16", 640, codec.Format{Encoding: codec.L16, Rate: 16000}},
		{"slin24", 960, codec.Format{Encoding: codec.L16, Rate: 24000}},
	} {
		s := asteriskStarted(t, strings.NewReplacer("ulaw", tt.name, "160", strconv.Itoa(tt.frame)).Replace(asteriskPlainStart))
		if s.Format() != tt.want {
			t.Errorf("%s: format %v, want %v", tt.name, s.Format(), tt.want)
		}
		var in transport.Inbound
		if err := s.Decode(transport.Binary, make([]byte, tt.frame), &in); err != nil || len(in.Audio) != tt.frame {
			t.Errorf("%s: a 20 ms frame: %v", tt.name, err)
		}
	}
	for _, tt := range []struct{ start, want string }{
		{strings.Replace(asteriskPlainStart, "ulaw", "opus", 1), `asterisk: MEDIA_START format "opus": voxhost takes ulaw, alaw, slin, slin16 or slin24 (the dial string's c() option)`},
		{strings.Replace(asteriskPlainStart, "ulaw", "slin48", 1), `asterisk: MEDIA_START format "slin48": voxhost takes ulaw, alaw, slin, slin16 or slin24 (the dial string's c() option)`},
		{strings.Replace(asteriskPlainStart, "optimal_frame_size:160", "optimal_frame_size:240", 1), "asterisk: MEDIA_START optimal_frame_size 240 does not divide the 160 bytes of 20 ms of ulaw the host sends"},
	} {
		var in transport.Inbound
		if perr := wantProtocolError(t, asteriskSession(t, "").Decode(transport.Text, []byte(tt.start), &in), "asterisk", tt.want); !perr.Unsupported {
			t.Errorf("%s: not marked unsupported", tt.want)
		}
	}
}

// ?answer=1 has the host answer a channel dialled with n at once, in the
// form of MEDIA_START.
func TestAsteriskAnswer(t *testing.T) {
	for start, want := range map[string]string{asteriskPlainStart: "ANSWER", asteriskJSONStart: `{"command":"ANSWER"}`} {
		s := asteriskSession(t, "answer=1")
		var in transport.Inbound
		if err := s.Decode(transport.Text, []byte(start), &in); err != nil {
			t.Fatal(err)
		}
		if in.Kind != transport.KindStart || in.ReplyType != transport.Text || string(in.Reply) != want {
			t.Errorf("MEDIA_START with ?answer=1: %v, reply %v %q; want %q", in.Kind, in.ReplyType, in.Reply, want)
		}
	}
	_, err := transport.Asterisk().NewSession(transport.SessionConfig{MaxFrameMs: 20, Query: url.Values{"answer": {"yes"}}})
	if err == nil || err.Error() != `asterisk: answer is 1 or true (send ANSWER when media starts), 0 or false, not "yes"` {
		t.Errorf("?answer=yes: %v", err)
	}
}

// Asterisk drops a command over 128 bytes: a mark whose MARK_MEDIA would
// be longer, or whose name Asterisk would not return as it is, goes out
// under a short id and comes back under its name.
func TestAsteriskMarkAliases(t *testing.T) {
	long := strings.Repeat("m", transport.MaxMarkBytes)
	for _, start := range []string{asteriskPlainStart, asteriskJSONStart} {
		s := asteriskStarted(t, start)
		plain := start == asteriskPlainStart
		for _, name := range []string{long, " padded ", "line\nbreak", "voxhost-mark-1", "ok"} {
			_, msg, _ := s.Mark(name)
			if len(msg) > 128 {
				t.Errorf("MARK_MEDIA of %d bytes: Asterisk drops one over 128", len(msg))
			}
			id := string(msg)
			if plain {
				id = strings.TrimPrefix(id, "MARK_MEDIA ")
			} else {
				var c struct {
					CorrelationID string `json:"correlation_id"`
				}
				json.Unmarshal(msg, &c)
				id = c.CorrelationID
			}
			if name == "ok" && id != "ok" || name == " padded " && !plain && id != name {
				t.Errorf("%q went out as %q, want its own name", name, id)
			}
			if name == long && id == long {
				t.Errorf("a %d-byte name went out as it is", len(name))
			}
			back := "MEDIA_MARK_PROCESSED " + id
			if !plain {
				b, _ := json.Marshal(map[string]string{"event": "MEDIA_MARK_PROCESSED", "channel_id": asteriskChannelID, "correlation_id": id})
				back = string(b)
			}
			var in transport.Inbound
			if err := s.Decode(transport.Text, []byte(back), &in); err != nil || in.Kind != transport.KindMark || in.Mark != name {
				t.Errorf("%q sent as %q came back as %v %q (%v)", name, id, in.Kind, in.Mark, err)
			}
		}
	}
}

// A message over 65,500 bytes makes Asterisk hang up: the host refuses
// one as a limit and never renders one.
func TestAsteriskMessageLimit(t *testing.T) {
	s, err := transport.Asterisk().NewSession(transport.SessionConfig{MaxFrameMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	var in transport.Inbound
	start := strings.NewReplacer("ulaw", "slin24", "160", "960").Replace(asteriskPlainStart)
	if err := s.Decode(transport.Text, []byte(start), &in); err != nil {
		t.Fatal(err)
	}
	perr := wantProtocolError(t, s.Decode(transport.Binary, make([]byte, 65520), &in), "asterisk", "asterisk: message of 65520 bytes is longer than the 65500 chan_websocket takes")
	if !perr.Limit {
		t.Error("not marked as a limit")
	}
	// 5 s of 24 kHz L16 would pass MaxFrameMs; the limit is 65,472 bytes,
	// whole ms.
	wantProtocolError(t, s.Decode(transport.Binary, make([]byte, 65472+48), &in), "asterisk", "asterisk: message of 65520 bytes is longer than the 65500 chan_websocket takes")
	if err := s.Decode(transport.Binary, make([]byte, 65472), &in); err != nil {
		t.Errorf("65,472 bytes: %v", err)
	}
	if _, msg := s.Audio(make([]byte, 96000)); len(msg) > 65500 || len(msg)%960 != 0 {
		t.Errorf("Audio rendered %d bytes, want whole frames under 65,500", len(msg))
	}
}

func TestAsteriskErrors(t *testing.T) {
	started := func(t *testing.T) transport.Session { return asteriskStarted(t, asteriskPlainStart) }
	fresh := func(t *testing.T) transport.Session { return asteriskSession(t, "") }
	for _, tt := range []struct {
		name    string
		session func(*testing.T) transport.Session
		typ     transport.MessageType
		msg     string
		want    string
		limit   bool
	}{
		{"audio before MEDIA_START", fresh, transport.Binary, string(tone(0, 160)), "asterisk: audio before MEDIA_START: Asterisk sends MEDIA_START first", false},
		{"odd frame", started, transport.Binary, string(tone(0, 161)), "asterisk: audio frame of 161 bytes is not a multiple of 8 (whole milliseconds of 8 kHz μ-law)", false},
		{"empty frame", started, transport.Binary, "", "asterisk: empty audio frame", false},
		{"second MEDIA_START", started, transport.Text, asteriskPlainStart, "asterisk: a second MEDIA_START: one connection carries one channel", false},
		{"bad JSON", fresh, transport.Text, `{"event":"MEDIA_START",`, "asterisk: bad JSON event: unexpected end of JSON input", false},
		{"JSON without event", fresh, transport.Text, `{"command":"ANSWER"}`, `asterisk: JSON message without an "event"`, false},
		{"JSON of the wrong type", fresh, transport.Text, `{"event":"MEDIA_START","optimal_frame_size":"160"}`, "asterisk: bad JSON event: json: cannot unmarshal string into Go struct field asteriskEvent.optimal_frame_size of type int", false},
		{"empty text", fresh, transport.Text, " \n", "asterisk: empty text message", false},
		{"not UTF-8", fresh, transport.Text, "MEDIA_START \xff", "asterisk: text message that is not UTF-8", false},
		{"bad frame size", fresh, transport.Text, "MEDIA_START format:ulaw optimal_frame_size:x", `asterisk: MEDIA_START with optimal_frame_size "x", not a number of bytes`, false},
		{"bad digit", started, transport.Text, "DTMF_END digit:x", `asterisk: DTMF_END digit "x" is not one of 0-9 * # A-D`, false},
		{"no digit", started, transport.Text, `{"event":"DTMF_END"}`, `asterisk: DTMF_END digit "" is not one of 0-9 * # A-D`, false},
		{"connection id with a space", fresh, transport.Text, `{"event":"MEDIA_START","format":"ulaw","connection_id":"a b"}`, `asterisk: MEDIA_START connection_id has ' ' at byte 1; ids are ASCII letters, digits and - _ . :`, true},
		{"long mark", started, transport.Text, "MEDIA_MARK_PROCESSED " + strings.Repeat("m", 257), "asterisk: MEDIA_MARK_PROCESSED correlation_id of 257 bytes is longer than 256", true},
		{"unknown type", fresh, 9, "x", "asterisk: message of unknown WebSocket type 9", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := transport.Inbound{Kind: transport.KindStop, Mark: "m"}
			perr := wantProtocolError(t, tt.session(t).Decode(tt.typ, []byte(tt.msg), &in), "asterisk", tt.want)
			if perr.Limit != tt.limit {
				t.Errorf("Limit %v, want %v", perr.Limit, tt.limit)
			}
			if in.Kind != transport.KindIgnore || in.Mark != "" {
				t.Errorf("a failed Decode left %+v", in)
			}
		})
	}
	// Too many channel variables are a limit, as custom parameters are.
	vars := map[string]string{}
	for i := range transport.MaxParams + 1 {
		vars["V"+strconv.Itoa(i)] = "x"
	}
	b, _ := json.Marshal(map[string]any{"event": "MEDIA_START", "format": "ulaw", "channel_variables": vars})
	var in transport.Inbound
	if perr := wantProtocolError(t, asteriskSession(t, "").Decode(transport.Text, b, &in), "asterisk", "asterisk: MEDIA_START channel_variables has 33 parameters, more than 32"); !perr.Limit {
		t.Error("too many variables: not a limit")
	}
}

// Before MEDIA_START there is no channel to mark, clear or hang up.
func TestAsteriskRendersNothingBeforeStart(t *testing.T) {
	s := asteriskSession(t, "")
	for name, ok := range map[string]bool{"mark": third(s.Mark("m")), "clear": third(s.Clear()), "hangup": third(s.Hangup())} {
		if ok {
			t.Errorf("%s rendered before MEDIA_START", name)
		}
	}
}

func TestAsteriskDialectOpen(t *testing.T) {
	b := newBot(t, "asterisk", codec.Format{Encoding: codec.L16, Rate: 16000}, nil)
	got := opened(t, b)
	if len(got) != 1 || got[0].typ != transport.Text {
		t.Fatalf("Open sent %v, want one MEDIA_START", got)
	}
	want := `{"event":"MEDIA_START","connection_id":"` + streamSid + `","channel":"WebSocket/voxhost-` + callSid + `","channel_id":"` + callSid +
		`","format":"slin16","optimal_frame_size":640,"ptime":20,"channel_variables":{"lang":"en","pipeline":"loud"}}`
	if got[0].msg != want {
		t.Errorf("MEDIA_START\n%s\nwant\n%s", got[0].msg, want)
	}
	plain := newBot(t, "asterisk", codec.Telephony, map[string]string{"control_message_format": "plain-text"})
	want = "MEDIA_START connection_id:" + streamSid + " channel:WebSocket/voxhost-" + callSid + " channel_id:" + callSid + " format:ulaw optimal_frame_size:160 ptime:20"
	if got := opened(t, plain); len(got) != 1 || got[0].msg != want {
		t.Errorf("plain-text MEDIA_START %v, want %q", got, want)
	}
	d, _ := transport.LookupDialect("asterisk")
	for opts, want := range map[string]string{
		"control_message_format=xml": `the asterisk dialect's control_message_format is json or plain-text, not "xml"`,
		"voice=alloy":                `the asterisk dialect has no option "voice" (it takes control_message_format)`,
	} {
		k, v, _ := strings.Cut(opts, "=")
		if err := transport.CheckOptions(d, map[string]string{k: v}); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", opts, err, want)
		}
	}
	if err := d.CheckFormat(codec.Format{Encoding: codec.L16, Rate: 44100}); err == nil {
		t.Error("44.1 kHz accepted")
	}
}

// The dialect and the server role understand each other in both forms:
// what voxhost says as Asterisk, voxhost reads as Asterisk's, and back.
func TestAsteriskRoundTrip(t *testing.T) {
	for _, form := range []string{"json", "plain-text"} {
		t.Run(form, func(t *testing.T) {
			bot := newBot(t, "asterisk", codec.Telephony, map[string]string{"control_message_format": form})
			srv := asteriskSession(t, "")
			dec := serverDecode(t, srv)
			start := dec(opened(t, bot)[0])
			if start.Kind != transport.KindStart || start.Start.StreamID != streamSid || start.Start.CallID != callSid {
				t.Fatalf("MEDIA_START decoded to %+v", start)
			}
			if form == "json" && start.Start.Params["lang"] != "en" {
				t.Errorf("channel_variables decoded to %v", start.Start.Params)
			}
			frame := tone(0, 160)
			checkBotToServer(t, bot, dec, frame)
			for _, name := range []string{"reply-1", ""} {
				typ, msg, _ := bot.MarkPlayed(name)
				if got := dec(sent{typ, string(msg)}); got.Kind != transport.KindMark || got.Mark != name {
					t.Errorf("MarkPlayed(%q) decoded to %v %q", name, got.Kind, got.Mark)
				}
			}
			typ, msg := srv.Audio(frame)
			if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindAudio || !bytes.Equal(got.Audio, frame) {
				t.Errorf("server audio decoded to %v", got.Kind)
			}
			for _, name := range []string{"turn 2", strings.Repeat("x", 200)} {
				typ, msg, _ := srv.Mark(name)
				got := decodeBot(t, bot, typ, msg)
				if got.Kind != transport.KindMark {
					t.Fatalf("mark decoded to %v", got.Kind)
				}
				// What the bot acknowledges comes back under the name.
				typ, msg, _ = bot.MarkPlayed(got.Mark)
				if back := dec(sent{typ, string(msg)}); back.Mark != name {
					t.Errorf("mark %q came back as %q", name, back.Mark)
				}
			}
			typ, msg, _ = srv.Clear()
			if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindClear {
				t.Errorf("clear decoded to %v", got.Kind)
			}
			typ, msg, _ = srv.Hangup()
			if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindStop {
				t.Errorf("hangup decoded to %v", got.Kind)
			}
			if third(bot.Stop()) || third(bot.Event("vad", "x", nil, 0)) {
				t.Error("Stop or Event rendered a message; Asterisk closes the socket and has no event for it")
			}
		})
	}
}

// checkBotToServer checks that a dialect's audio frame and keys decode in
// the server role of its protocol (dec) as they were sent.
func checkBotToServer(t *testing.T, bot transport.BotSession, dec func(sent) transport.Inbound, frame []byte) {
	t.Helper()
	typ, msg := bot.Audio(frame)
	if got := dec(sent{typ, string(msg)}); got.Kind != transport.KindAudio || !bytes.Equal(got.Audio, frame) {
		t.Errorf("audio decoded to %v", got.Kind)
	}
	for _, c := range []byte("0123456789*#ABCD") {
		typ, msg, _ := bot.DTMF(c)
		if got := dec(sent{typ, string(msg)}); got.Kind != transport.KindDTMF || got.Digit != c {
			t.Errorf("DTMF %c decoded to %v %q", c, got.Kind, got.Digit)
		}
	}
}

// What an application sends Asterisk, as Asterisk reads it.
func TestAsteriskDialectDecode(t *testing.T) {
	bot := newBot(t, "asterisk", codec.Telephony, nil)
	plain := newBot(t, "asterisk", codec.Telephony, map[string]string{"control_message_format": "plain-text"})
	pcm := tone(0, 37) // Asterisk re-frames audio of any length
	decodeSteps(t, bot, []decodeStep{
		{transport.Binary, string(pcm), transport.Inbound{Kind: transport.KindAudio, Audio: pcm}},
		{transport.Text, `{"command":"ANSWER"}`, transport.Inbound{}},
		{transport.Text, `{"command":"START_MEDIA_BUFFERING"}`, transport.Inbound{}},
		{transport.Text, `{"command":"STOP_MEDIA_BUFFERING","correlation_id":"61ea9311-d501-46e5-8825-017b342b39f2"}`, transport.Inbound{}},
		{transport.Text, `{"command":"MARK_MEDIA","correlation_id":"m1"}`, transport.Inbound{Kind: transport.KindMark, Mark: "m1"}},
		{transport.Text, `{"command":"FLUSH_MEDIA"}`, transport.Inbound{Kind: transport.KindClear}},
		{transport.Text, `{"command":"GET_STATUS"}`, transport.Inbound{}},
		{transport.Text, `{"command":"MARK_MEDIA","correlation_id":"` + strings.Repeat("m", 120) + `"}`, transport.Inbound{}}, // over 128 bytes: dropped
		{transport.Text, `{"command":"HANGUP"}`, transport.Inbound{Kind: transport.KindStop}},
	})
	decodeSteps(t, plain, []decodeStep{
		{transport.Text, "MARK_MEDIA m 2 ", transport.Inbound{Kind: transport.KindMark, Mark: "m 2"}},
		{transport.Text, "FLUSH_MEDIA", transport.Inbound{Kind: transport.KindClear}},
		{transport.Text, "flush_media", transport.Inbound{}}, // commands are case-sensitive
		{transport.Text, "HANGUP\n", transport.Inbound{Kind: transport.KindStop}},
	})
	decodeErrors(t, "asterisk", func(t *testing.T) transport.BotSession { return newBot(t, "asterisk", codec.Telephony, nil) }, []decodeError{
		{name: "bad JSON", typ: transport.Text, msg: `{"command":`, want: "asterisk: bad JSON command: unexpected end of JSON input"},
		{name: "empty audio", typ: transport.Binary, msg: "", want: "asterisk: empty audio frame"},
		{name: "audio over the limit", typ: transport.Binary, msg: string(tone(0, maxAudio+1)), want: "asterisk: audio frame of 1601 bytes exceeds the limit of 1600"},
	})
	big := transport.BotConfig{Format: codec.Telephony, MaxAudio: 1 << 20}
	d, _ := transport.LookupDialect("asterisk")
	var in transport.Inbound
	if perr := wantProtocolError(t, d.NewBotSession(big).Decode(transport.Binary, make([]byte, 65501), &in), "asterisk",
		"asterisk: audio message of 65501 bytes: chan_websocket hangs up on one over 65500"); !perr.Limit {
		t.Error("not a limit")
	}
}

func TestAsteriskAudioPathDoesNotAllocate(t *testing.T) {
	srv := asteriskStarted(t, asteriskJSONStart)
	bot := newBot(t, "asterisk", codec.Telephony, nil)
	frame := tone(0, 160)
	var in transport.Inbound
	for name, run := range map[string]func(){
		"server decode": func() {
			if err := srv.Decode(transport.Binary, frame, &in); err != nil {
				t.Fatal(err)
			}
		},
		"server render": func() { srv.Audio(frame) },
		"bot decode": func() {
			if err := bot.Decode(transport.Binary, frame, &in); err != nil {
				t.Fatal(err)
			}
		},
		"bot render":   func() { bot.Audio(frame) },
		"server clear": func() { srv.Clear() },
	} {
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}

// FuzzAsteriskDecode checks that the server role never panics, that what
// it refuses is a *ProtocolError, and that what it accepts keeps the
// bounds: audio of whole ms within the limit only after MEDIA_START, a
// start with ids CheckID takes, marks within MaxMarkBytes.
func FuzzAsteriskDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, started bool, binary bool, msg []byte) {
		s := asteriskSession(t, "answer=1")
		var in transport.Inbound
		start := ""
		if started {
			start = asteriskJSONStart
		}
		if !fuzzDecode(t, s, start, binary, msg, &in) {
			return
		}
		switch in.Kind {
		case transport.KindAudio:
			if !started || len(in.Audio) == 0 || len(in.Audio) > 65500 || len(in.Audio)%s.Format().BytesPerMs() != 0 {
				t.Fatalf("audio of %d bytes passed (started %v)", len(in.Audio), started)
			}
		case transport.KindStart:
			if transport.CheckID("stream", in.Start.StreamID) != nil || transport.CheckID("call", in.Start.CallID) != nil ||
				transport.CheckParams("params", in.Start.Params) != nil || s.Format().Check() != nil {
				t.Fatalf("start %+v in %v passed", in.Start, s.Format())
			}
			if _, ok := in.Start.Params["MEDIA_WEBSOCKET_CONNECTION_ID"]; ok {
				t.Fatal("the driver's own variable passed as a parameter")
			}
			if string(in.Reply) != "ANSWER" && string(in.Reply) != `{"command":"ANSWER"}` {
				t.Fatalf("answered with %q", in.Reply)
			}
		case transport.KindMark:
			if len(in.Mark) > transport.MaxMarkBytes {
				t.Fatalf("mark of %d bytes passed", len(in.Mark))
			}
		}
		// Whatever came, what the host renders stays within what
		// Asterisk reads.
		for _, r := range []func() (transport.MessageType, []byte, bool){s.Clear, s.Hangup, func() (transport.MessageType, []byte, bool) { return s.Mark(string(msg)) }} {
			if _, out, ok := r(); ok && (len(out) > 128 || !utf8.Valid(out)) {
				t.Fatalf("rendered %q", out)
			}
		}
	})
}

// fuzzDecode decodes msg, binary or text, with s, after start unless it
// is empty, and says whether it passed. A refusal must be a
// *ProtocolError that leaves the zero Inbound.
func fuzzDecode(t *testing.T, s transport.Session, start string, binary bool, msg []byte, in *transport.Inbound) bool {
	t.Helper()
	if start != "" {
		if err := s.Decode(transport.Text, []byte(start), in); err != nil {
			t.Fatal(err)
		}
	}
	typ := transport.Text
	if binary {
		typ = transport.Binary
	}
	err := s.Decode(typ, msg, in)
	if err == nil {
		return true
	}
	var perr *transport.ProtocolError
	if !errors.As(err, &perr) || in.Kind != transport.KindIgnore || in.Start != nil || in.Audio != nil {
		t.Fatalf("error %v (%T), left %+v", err, err, *in)
	}
	return false
}

// FuzzAsteriskBotDecode checks that what the dialect takes from a bot is
// what Asterisk would: audio within the bounds, marks within
// MaxMarkBytes, and nothing but audio, mark, clear and stop.
func FuzzAsteriskBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, plain bool, binary bool, msg []byte) {
		var opts map[string]string
		if plain {
			opts = map[string]string{"control_message_format": "plain-text"}
		}
		b := newBot(t, "asterisk", codec.Format{Encoding: codec.L16, Rate: 16000}, opts)
		typ := transport.Text
		if binary {
			typ = transport.Binary
		}
		var in transport.Inbound
		err := b.Decode(typ, msg, &in)
		if err != nil {
			var perr *transport.ProtocolError
			if !errors.As(err, &perr) || in.Kind != transport.KindIgnore {
				t.Fatalf("error %v (%T), left %+v", err, err, in)
			}
			return
		}
		switch in.Kind {
		case transport.KindAudio:
			wantBotAudio(t, in.Audio, codec.Format{Encoding: codec.L16, Rate: 16000})
		case transport.KindMark:
			if len(in.Mark) > transport.MaxMarkBytes || len(msg) > 128 {
				t.Fatalf("mark %q from a %d-byte command", in.Mark, len(msg))
			}
		case transport.KindIgnore, transport.KindClear, transport.KindStop:
		default:
			t.Fatalf("a bot's message decoded as %v", in.Kind)
		}
	})
}
