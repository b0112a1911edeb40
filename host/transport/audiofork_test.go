package transport_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// The messages of TopCS/freeswitch-modules mod_audio_fork/README.md:
//
//	const callerData = {to: '6173333456', from: '2061236666', callid: req.get('Call-Id')};
//	ep.api('uuid_audio_fork', `${ep.uuid} start ${url} mono 8k ${JSON.stringify(callerData)}`);
//
//	"metadata - a text frame of arbitrary data to send to the back-end
//	server immediately upon connecting. Once this text frame has been
//	sent, the incoming audio will be sent in binary frames to the server."
//
//	{
//		"type": "playAudio",
//		"data": {
//			"audioContentType": "raw",
//			"sampleRate": 8000,
//			"audioContent": "base64 encoded raw audio..",
//			"textContent": "Hi there!  How can we help?"
//		}
//	}
//
//	{ "type": "killAudio", }      (sic: the README's trailing comma)
//	{ "type": "disconnect" }
//
// and of amigniter/mod_audio_stream's README: "uuid_audio_stream <uuid>
// start <wss-url> <mix-type> <sampling-rate> <metadata>", "metadata -
// (optional) a valid utf-8 text to send", and
//
//	{
//	  "type": "streamAudio",
//	  "data": {
//	    "audioDataType": "raw",
//	    "sampleRate": 8000,
//	    "audioData": "base64 encoded audio"
//	  }
//	}
const forkCallerData = `{"to":"6173333456","from":"2061236666","callid":"a84b4c76e66710@pc33.atlanta.com"}`

// forkSession makes a session of the named protocol for frames of up to
// 200 ms, with the query the module connected with.
func forkSession(t testing.TB, name, query string) transport.Session {
	t.Helper()
	p, err := transport.LookupProtocol(name)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(query)
	s, err := p.NewSession(transport.SessionConfig{MaxFrameMs: 200, Query: q})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forkStarted is a session that decoded the metadata.
func forkStarted(t testing.TB, name, query, metadata string) transport.Session {
	t.Helper()
	s := forkSession(t, name, query)
	var in transport.Inbound
	if err := s.Decode(transport.Text, []byte(metadata), &in); err != nil || in.Kind != transport.KindStart {
		t.Fatalf("%s: %v %v", metadata, in.Kind, err)
	}
	return s
}

func TestForkProtocols(t *testing.T) {
	for _, tt := range []struct {
		name, path string
		sub        []string
	}{
		{"audiofork", "/audiofork", []string{"audio.drachtio.org"}},
		{"audiostream", "/audiostream", nil},
		{"jambonz", "/jambonz", []string{"audio.jambonz.org"}},
	} {
		p, err := transport.LookupProtocol(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Path() != tt.path || p.StartsOnConnect() || p.Buffers() {
			t.Errorf("%s: path %q, starts on connect %v, buffers %v", tt.name, p.Path(), p.StartsOnConnect(), p.Buffers())
		}
		sp, ok := p.(interface{ Subprotocols() []string })
		if !ok || !reflect.DeepEqual(sp.Subprotocols(), tt.sub) {
			t.Errorf("%s: subprotocols %v, want %v", tt.name, sp, tt.sub)
		}
		d, err := transport.LookupDialect(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if ds, ok := d.(interface{ Subprotocols() []string }); !ok || !reflect.DeepEqual(ds.Subprotocols(), tt.sub) {
			t.Errorf("%s dialect: subprotocols %v, want %v", tt.name, ds, tt.sub)
		}
	}
}

func TestAudioforkConversation(t *testing.T) {
	s := forkSession(t, "audiofork", "rate=8k")
	frames := [][]byte{slin(8000, 320), slin(8000, 640)}
	decodeSteps(t, s, []decodeStep{
		{transport.Text, forkCallerData, transport.Inbound{Kind: transport.KindStart, Start: &transport.Start{
			Params: map[string]string{"to": "6173333456", "from": "2061236666", "callid": "a84b4c76e66710@pc33.atlanta.com"}}}},
		{transport.Binary, string(frames[0]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[0]}},
		// "uuid_audio_fork <uuid> send_text <metadata> ... (e.g. this can
		// be used to notify of DTMF events)", in jambonz's form.
		{transport.Text, `{"event":"dtmf","dtmf":"5","duration":"1600"}`, transport.Inbound{Kind: transport.KindDTMF, Digit: '5'}},
		{transport.Binary, string(frames[1]), transport.Inbound{Kind: transport.KindAudio, Audio: frames[1]}},
		{transport.Text, `any text at all`, transport.Inbound{}},
		{transport.Text, `{"event":"hold"}`, transport.Inbound{}},
		// "graceful shutdown - sending zero length binary frame"
		// (mod_audio_fork/audio_pipe.cpp).
		{transport.Binary, "", transport.Inbound{Kind: transport.KindStop}},
	})
	if f := s.Format(); f != (codec.Format{Encoding: codec.L16, Rate: 8000}) {
		t.Fatalf("format %v, want 8 kHz L16 from ?rate=8k", f)
	}
	frame := slin(8000, 320)
	typ, msg := s.Audio(frame)
	var play struct {
		Type string
		Data struct {
			AudioContentType string `json:"audioContentType"`
			SampleRate       int    `json:"sampleRate"`
			AudioContent     []byte `json:"audioContent"`
		}
	}
	decodeExactly(t, typ, msg, &play)
	if play.Type != "playAudio" || play.Data.AudioContentType != "raw" || play.Data.SampleRate != 8000 || !bytes.Equal(play.Data.AudioContent, frame) {
		t.Errorf("playAudio %s does not carry the frame as raw 8000 Hz audio", msg)
	}
	for want, r := range map[string]func() (transport.MessageType, []byte, bool){
		`{"type":"killAudio"}`:  s.Clear,
		`{"type":"disconnect"}`: s.Hangup,
		`{"type":"json","event":"plugin","plugin":"vad","name":"speech_start","data":{"energy":0.5},"t_ms":1240}`: func() (transport.MessageType, []byte, bool) {
			return s.Event("vad", "speech_start", []byte(`{"energy":0.5}`), 1240)
		},
	} {
		if typ, msg, ok := r(); typ != transport.Text || !ok || string(msg) != want {
			t.Errorf("rendered %v %s %v, want %s", typ, msg, ok, want)
		}
	}
	if third(s.Mark("m")) {
		t.Error("Mark rendered a message; mod_audio_fork has no marks")
	}
}

func TestAudiostreamConversation(t *testing.T) {
	s := forkSession(t, "audiostream", "rate=16000")
	frame := slin(16000, 640)
	decodeSteps(t, s, []decodeStep{
		// Metadata is any UTF-8 text: kept whole.
		{transport.Text, "caller 2061236666", transport.Inbound{Kind: transport.KindStart, Start: &transport.Start{Params: map[string]string{"metadata": "caller 2061236666"}}}},
		{transport.Binary, string(frame), transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
	})
	typ, msg := s.Audio(frame)
	var play struct {
		Type string
		Data struct {
			AudioDataType string `json:"audioDataType"`
			SampleRate    int    `json:"sampleRate"`
			AudioData     []byte `json:"audioData"`
		}
	}
	decodeExactly(t, typ, msg, &play)
	if play.Type != "streamAudio" || play.Data.AudioDataType != "raw" || play.Data.SampleRate != 16000 || !bytes.Equal(play.Data.AudioData, frame) {
		t.Errorf("streamAudio %s does not carry the frame as raw 16000 Hz audio", msg)
	}
	if third(s.Clear()) || third(s.Hangup()) || third(s.Mark("m")) {
		t.Error("mod_audio_stream has no clear, hang-up or mark message, yet one rendered")
	}
	if _, msg, ok := s.Event("vad", "speech_start", nil, 20); !ok || !json.Valid(msg) {
		t.Errorf("Event rendered %s %v", msg, ok)
	}
	// Nothing before the metadata.
	fresh := forkSession(t, "audiofork", "")
	if third(fresh.Clear()) || third(fresh.Hangup()) || third(fresh.Event("a", "b", nil, 0)) {
		t.Error("rendered before the metadata")
	}
}

// The rate is the metadata's sampleRate, else the URL's ?rate=; a stream
// of neither is refused, naming both, as is a rate the host does not
// carry.
func TestForkRates(t *testing.T) {
	l16 := func(r int) codec.Format { return codec.Format{Encoding: codec.L16, Rate: r} }
	for _, tt := range []struct {
		proto, query, metadata string
		want                   codec.Format
	}{
		{"audiofork", "rate=16k", `{}`, l16(16000)},
		{"audiofork", "rate=8000", `{"sampleRate":24000}`, l16(24000)},
		{"audiostream", "", `{"sampleRate":"16000"}`, l16(16000)},
		{"jambonz", "", `{"callSid":"x"}`, l16(8000)}, // listen's default
	} {
		if s := forkStarted(t, tt.proto, tt.query, tt.metadata); s.Format() != tt.want {
			t.Errorf("%s ?%s %s: %v, want %v", tt.proto, tt.query, tt.metadata, s.Format(), tt.want)
		}
	}
	for _, tt := range []struct{ proto, query, metadata, want string }{
		{"audiofork", "", `{"to":"6173333456"}`, "audiofork: the stream's sample rate is not known: give the fork's rate as ?rate=8000 or ?rate=16000 in its URL, or as sampleRate in its metadata"},
		{"audiostream", "", `hello`, "audiostream: the stream's sample rate is not known: give the fork's rate as ?rate=8000 or ?rate=16000 in its URL, or as sampleRate in its metadata"},
		{"jambonz", "", `{"sampleRate":48000}`, "jambonz: sample rate 48000: voxhost takes L16 at 8000, 16000 or 24000 Hz"},
		{"jambonz", "", `{"sampleRate":8000,"mixType":"stereo"}`, `jambonz: mixType "stereo": voxhost takes one channel (mono or mixed), not two interleaved`},
	} {
		var in transport.Inbound
		perr := wantProtocolError(t, forkSession(t, tt.proto, tt.query).Decode(transport.Text, []byte(tt.metadata), &in), tt.proto, tt.want)
		if !perr.Unsupported {
			t.Errorf("%s: not marked unsupported", tt.want)
		}
	}
	p, _ := transport.LookupProtocol("audiofork")
	for query, want := range map[string]string{
		"rate=44100": "audiofork: rate L16 is carried at 8000, 16000 or 24000 Hz, not 44100",
		"rate=fast":  `audiofork: rate "fast" is not a number of Hz`,
	} {
		q, _ := url.ParseQuery(query)
		if _, err := p.NewSession(transport.SessionConfig{MaxFrameMs: 20, Query: q}); err == nil || err.Error() != want {
			t.Errorf("?%s: %v, want %s", query, err, want)
		}
	}
}

func TestForkErrors(t *testing.T) {
	params := map[string]any{}
	for i := range transport.MaxParams + 1 {
		params[strings.Repeat("k", i+1)] = i
	}
	tooMany, _ := json.Marshal(params)
	for _, tt := range []struct {
		name, proto string
		started     bool
		typ         transport.MessageType
		msg, want   string
		limit       bool
	}{
		{"audio before the metadata", "audiofork", false, transport.Binary, string(slin(8000, 320)),
			"audiofork: audio before the metadata: mod_audio_fork sends a text frame of metadata first (give the fork command one, {} will do)", false},
		{"odd frame", "audiofork", true, transport.Binary, string(slin(8000, 321)), "audiofork: audio frame of 321 bytes is not a multiple of 16 (whole milliseconds of 8 kHz L16)", false},
		{"too long", "audiostream", true, transport.Binary, string(make([]byte, 3216)), "audiostream: audio frame of 3216 bytes exceeds the limit of 3200", false},
		{"bad digit", "audiofork", true, transport.Text, `{"event":"dtmf","dtmf":"55"}`, `audiofork: dtmf "55" is not one of 0-9 * # A-D`, false},
		{"dtmf without one", "jambonz", true, transport.Text, `{"event":"dtmf","dtmf":5}`, `jambonz: dtmf event without a string "dtmf"`, false},
		{"broken metadata", "audiofork", false, transport.Text, `{"to":`, "audiofork: metadata that begins as a JSON object is not one: unexpected end of JSON input", false},
		{"jambonz text", "jambonz", false, transport.Text, `hello`, "jambonz: the first text frame is not a JSON object: jambonz sends the call's attributes as one", false},
		{"rate not a number", "jambonz", false, transport.Text, `{"sampleRate":"fast"}`, `jambonz: metadata sampleRate "fast" is not a number of Hz`, false},
		{"call id", "jambonz", false, transport.Text, `{"callSid":"a b"}`, "jambonz: metadata callSid has ' ' at byte 1; ids are ASCII letters, digits and - _ . :", true},
		{"too many", "audiofork", false, transport.Text, string(tooMany), "audiofork: metadata has 33 parameters, more than 32", true},
		{"mark too long", "jambonz", true, transport.Text, `{"type":"mark","data":{"name":"` + strings.Repeat("m", 257) + `"}}`, "jambonz: mark data.name of 257 bytes is longer than 256", true},
		{"mark without a name", "jambonz", true, transport.Text, `{"type":"mark","data":{}}`, "jambonz: mark without a string data.name", false},
		{"unknown type", "jambonz", true, 7, "x", "jambonz: message of unknown WebSocket type 7", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := forkSession(t, tt.proto, "rate=8000")
			if tt.started {
				s = forkStarted(t, tt.proto, "rate=8000", `{}`)
			}
			in := transport.Inbound{Kind: transport.KindStop}
			perr := wantProtocolError(t, s.Decode(tt.typ, []byte(tt.msg), &in), tt.proto, tt.want)
			if perr.Limit != tt.limit {
				t.Errorf("Limit %v, want %v", perr.Limit, tt.limit)
			}
			if in.Kind != transport.KindIgnore {
				t.Errorf("a failed Decode left %+v", in)
			}
		})
	}
}

func TestForkDialectOpen(t *testing.T) {
	call := testCall
	call.Params = map[string]string{"lang": "en", "sampleRate": "1", "callSid": "forged"}
	d, _ := transport.LookupDialect("audiofork")
	b := d.NewBotSession(transport.BotConfig{Format: codec.Format{Encoding: codec.L16, Rate: 16000}, MaxAudio: maxAudio, Call: call})
	got := opened(t, b)
	want := `{"sampleRate":16000,"mixType":"mono","callSid":"` + callSid + `","accountSid":"` + accountSid + `","lang":"en"}`
	if len(got) != 1 || got[0].typ != transport.Text || got[0].msg != want {
		t.Errorf("metadata %v\nwant %s", got, want)
	}
	call.AccountID, call.Params = "", nil
	b = d.NewBotSession(transport.BotConfig{Format: codec.Format{Encoding: codec.L16, Rate: 8000}, MaxAudio: maxAudio, Call: call})
	if got := opened(t, b); got[0].msg != `{"sampleRate":8000,"mixType":"mono","callSid":"`+callSid+`"}` {
		t.Errorf("metadata without account or parameters: %s", got[0].msg)
	}
	for _, name := range []string{"audiofork", "audiostream", "jambonz"} {
		d, _ := transport.LookupDialect(name)
		if err := d.CheckFormat(codec.Telephony); err == nil || err.Error() != "the "+name+" dialect carries L16 at 8000, 16000 or 24000 Hz, not 8 kHz μ-law" {
			t.Errorf("%s: μ-law: %v", name, err)
		}
	}
}

// Each module's dialect and server role understand each other: what
// voxhost says as the module, voxhost reads as the module's, and back.
func TestForkRoundTrip(t *testing.T) {
	f := codec.Format{Encoding: codec.L16, Rate: 16000}
	for _, name := range []string{"audiofork", "audiostream", "jambonz"} {
		t.Run(name, func(t *testing.T) {
			bot := newBot(t, name, f, nil)
			srv := forkSession(t, name, "")
			dec := serverDecode(t, srv)
			start := dec(opened(t, bot)[0])
			if start.Kind != transport.KindStart || start.Start.CallID != callSid || start.Start.AccountID != accountSid || start.Start.Params["lang"] != "en" || srv.Format() != f {
				t.Fatalf("metadata decoded to %+v at %v", start, srv.Format())
			}
			frame := slin(16000, 640)
			checkBotToServer(t, bot, dec, frame)
			typ, msg := srv.Audio(frame)
			if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindAudio || !bytes.Equal(got.Audio, frame) {
				t.Errorf("server audio %.60s… decoded to %v", msg, got.Kind)
			}
			if typ, msg, ok := srv.Clear(); ok {
				if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindClear {
					t.Errorf("clear decoded to %v", got.Kind)
				}
			}
			if typ, msg, ok := srv.Hangup(); ok {
				if got := decodeBot(t, bot, typ, msg); got.Kind != transport.KindStop {
					t.Errorf("hangup decoded to %v", got.Kind)
				}
			}
			if typ, msg, ok := bot.MarkPlayed(`reply "1" ✓`); ok != (name == "jambonz") {
				t.Errorf("MarkPlayed rendered: %v", ok)
			} else if ok {
				if got := dec(sent{typ, string(msg)}); got.Kind != transport.KindMark || got.Mark != `reply "1" ✓` {
					t.Errorf("mark decoded to %v %q", got.Kind, got.Mark)
				}
			}
			if third(bot.Stop()) || third(bot.Event("vad", "x", nil, 0)) || bot.Interrupted(0, false, nil) != nil {
				t.Error("the modules end with the close and send their server no events")
			}
		})
	}
}

// What a server sends the module, as the module reads it.
func TestForkDialectDecode(t *testing.T) {
	f := codec.Format{Encoding: codec.L16, Rate: 8000}
	pcm := slin(8000, 320)
	b64 := base64.StdEncoding.EncodeToString(pcm)
	readme := `{
	"type": "playAudio",
	"data": {
		"audioContentType": "raw",
		"sampleRate": 8000,
		"audioContent": "` + b64 + `",
		"textContent": "Hi there!  How can we help?"
	}
}`
	decodeSteps(t, newBot(t, "audiofork", f, nil), []decodeStep{
		{transport.Text, readme, transport.Inbound{Kind: transport.KindAudio, Audio: pcm}},
		{transport.Text, `{"type":"playAudio","data":{"audioContentType":"raw","sampleRate":"8000","audioContent":"` + b64 + `"}}`, transport.Inbound{Kind: transport.KindAudio, Audio: pcm}},
		{transport.Binary, string(pcm), transport.Inbound{}}, // "received binary frame, discarding"
		{transport.Text, `{"type":"transcription","data":{"text":"hi"}}`, transport.Inbound{}},
		{transport.Text, `{"type":"killAudio"}`, transport.Inbound{Kind: transport.KindClear}},
		{transport.Text, `{"type":"disconnect"}`, transport.Inbound{Kind: transport.KindStop}},
	})
	decodeSteps(t, newBot(t, "audiostream", f, nil), []decodeStep{
		{transport.Text, `{"type":"streamAudio","data":{"audioDataType":"raw","sampleRate":8000,"audioData":"` + b64 + `"}}`, transport.Inbound{Kind: transport.KindAudio, Audio: pcm}},
		{transport.Text, `{"type":"killAudio"}`, transport.Inbound{}}, // no such message
		{transport.Text, `{"type":"disconnect"}`, transport.Inbound{}},
	})
	decodeSteps(t, newBot(t, "jambonz", f, nil), []decodeStep{
		{transport.Binary, string(pcm[:3*2]), transport.Inbound{Kind: transport.KindAudio, Audio: pcm[:6]}},
		{transport.Text, `{"type":"mark","data":{"name":"my-mark-1"}}`, transport.Inbound{Kind: transport.KindMark, Mark: "my-mark-1"}},
		{transport.Text, `{"type":"clearMarks"}`, transport.Inbound{}},
		{transport.Text, `{"type":"killAudio"}`, transport.Inbound{Kind: transport.KindClear}},
		{transport.Text, `{"type":"disconnect"}`, transport.Inbound{Kind: transport.KindStop}},
	})
	decodeErrors(t, "audiofork", func(t *testing.T) transport.BotSession { return newBot(t, "audiofork", f, nil) }, []decodeError{
		{name: "wave", typ: transport.Text, msg: `{"type":"playAudio","data":{"audioContentType":"wave","audioContent":"UklGRg=="}}`,
			want: `audiofork: playAudio data.audioContentType "wave": voxhost takes "raw" L16 audio`},
		{name: "other rate", typ: transport.Text, msg: `{"type":"playAudio","data":{"audioContentType":"raw","sampleRate":16000,"audioContent":"` + b64 + `"}}`,
			want: `audiofork: playAudio data.sampleRate "16000" is not the leg's 8000 Hz: voxhost does not resample`},
		{name: "no rate", typ: transport.Text, msg: `{"type":"playAudio","data":{"audioContentType":"raw","audioContent":"` + b64 + `"}}`,
			want: `audiofork: playAudio data.sampleRate "" is not the leg's 8000 Hz: voxhost does not resample`},
		{name: "no data", typ: transport.Text, msg: `{"type":"playAudio"}`, want: "audiofork: playAudio without a data object"},
		{name: "no audio", typ: transport.Text, msg: `{"type":"playAudio","data":{"audioContentType":"raw","sampleRate":8000}}`, want: "audiofork: playAudio without a string data.audioContent"},
		{name: "bad base64", typ: transport.Text, msg: `{"type":"playAudio","data":{"audioContentType":"raw","sampleRate":8000,"audioContent":"!!!!"}}`,
			want: "audiofork: bad base64 in playAudio data.audioContent at byte 0"},
		{name: "odd audio", typ: transport.Text, msg: `{"type":"playAudio","data":{"audioContentType":"raw","sampleRate":8000,"audioContent":"AAAA"}}`,
			want: "audiofork: audio of 3 bytes is not a whole number of 2-byte l16 samples"},
		{name: "not JSON", typ: transport.Text, msg: `{"type":`, want: "audiofork: invalid JSON at byte 8: message ends early, expected a value"},
	})
	decodeErrors(t, "jambonz", func(t *testing.T) transport.BotSession { return newBot(t, "jambonz", f, nil) }, []decodeError{
		{name: "odd binary", typ: transport.Binary, msg: "abc", want: "jambonz: audio of 3 bytes is not a whole number of 2-byte l16 samples"},
		{name: "empty binary", typ: transport.Binary, msg: "", want: "jambonz: empty audio frame"},
		{name: "long mark", typ: transport.Text, msg: `{"type":"mark","data":{"name":"` + strings.Repeat("m", 257) + `"}}`, want: "jambonz: mark data.name of 257 bytes is longer than 256", limit: true},
	})
}

func TestForkAudioPathDoesNotAllocate(t *testing.T) {
	f := codec.Format{Encoding: codec.L16, Rate: 16000}
	frame := slin(16000, 640)
	af := forkStarted(t, "audiofork", "rate=16000", forkCallerData)
	jb := forkStarted(t, "jambonz", "", `{"sampleRate":16000}`)
	_, play := af.Audio(frame)
	play = bytes.Clone(play)
	afBot, asBot, jbBot := newBot(t, "audiofork", f, nil), newBot(t, "audiostream", f, nil), newBot(t, "jambonz", f, nil)
	_, stream := forkStarted(t, "audiostream", "rate=16000", "{}").Audio(frame)
	stream = bytes.Clone(stream)
	var in transport.Inbound
	decode := func(d decoder, typ transport.MessageType, msg []byte) func() {
		return func() {
			if err := d.Decode(typ, msg, &in); err != nil || in.Kind != transport.KindAudio {
				t.Fatal(err, in.Kind)
			}
		}
	}
	for name, run := range map[string]func(){
		"audiofork decode":       decode(af, transport.Binary, frame),
		"audiofork render":       func() { af.Audio(frame) },
		"jambonz decode":         decode(jb, transport.Binary, frame),
		"jambonz render":         func() { jb.Audio(frame) },
		"audiofork bot decode":   decode(afBot, transport.Text, play),
		"audiostream bot decode": decode(asBot, transport.Text, stream),
		"jambonz bot decode":     decode(jbBot, transport.Binary, frame),
		"audiofork bot render":   func() { afBot.Audio(frame) },
		"jambonz bot render":     func() { jbBot.Audio(frame) },
	} {
		if n := testing.AllocsPerRun(200, run); n != 0 {
			t.Errorf("%s: %v allocations per run, want 0", name, n)
		}
	}
}

var forkNames = []string{"audiofork", "audiostream", "jambonz"}

// FuzzForkDecode checks the server role of each module: no panic, every
// refusal a *ProtocolError, and what passes within the bounds: audio of
// whole ms after the metadata only, a start of ids CheckID takes at a rate
// the host carries, marks within MaxMarkBytes; and what it renders after
// is valid JSON.
func FuzzForkDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, started, binary bool, msg []byte) {
		name := forkNames[int(which)%len(forkNames)]
		s := forkSession(t, name, "rate=16000")
		var in transport.Inbound
		start := ""
		if started {
			start = `{"sampleRate":16000}`
		}
		if !fuzzDecode(t, s, start, binary, msg, &in) {
			return
		}
		switch in.Kind {
		case transport.KindAudio:
			if !started || len(in.Audio)%s.Format().BytesPerMs() != 0 || len(in.Audio) == 0 {
				t.Fatalf("audio of %d bytes passed (started %v)", len(in.Audio), started)
			}
		case transport.KindStart:
			if started || transport.CheckID("call", in.Start.CallID) != nil || transport.CheckID("account", in.Start.AccountID) != nil ||
				transport.CheckParams("params", in.Start.Params) != nil || s.Format().Check() != nil || s.Format().Encoding != codec.L16 {
				t.Fatalf("start %+v in %v passed", in.Start, s.Format())
			}
		case transport.KindMark:
			if name != "jambonz" || len(in.Mark) > transport.MaxMarkBytes {
				t.Fatalf("%s mark of %d bytes", name, len(in.Mark))
			}
		case transport.KindDTMF, transport.KindStop, transport.KindIgnore:
		default:
			t.Fatalf("decoded as %v", in.Kind)
		}
		if typ, out := s.Audio(slin(s.Format().Rate, s.Format().BytesPerMs()*20)); typ == transport.Text && !json.Valid(out) {
			t.Fatalf("Audio rendered %s", out)
		}
		if _, out, ok := s.Event("p", string(msg), msg, 1); ok && !json.Valid(out) {
			t.Fatalf("Event rendered %s", out)
		}
	})
}

// FuzzForkBotDecode checks each module's dialect: what it takes from a
// bot is what encoding/json finds, within the bounds, and nothing but
// audio, mark (jambonz), clear and stop.
func FuzzForkBotDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, which uint8, binary bool, msg []byte) {
		name := forkNames[int(which)%len(forkNames)]
		format := codec.Format{Encoding: codec.L16, Rate: 8000}
		b := newBot(t, name, format, nil)
		var in transport.Inbound
		if binary {
			err := b.Decode(transport.Binary, msg, &in)
			if name != "jambonz" {
				if err != nil || in.Kind != transport.KindIgnore {
					t.Fatalf("%s took a binary frame: %v %v", name, in.Kind, err)
				}
				return
			}
			if ok := len(msg) > 0 && len(msg) <= maxAudio && len(msg)%2 == 0; ok != (err == nil) {
				t.Fatalf("%d bytes of L16: error %v", len(msg), err)
			}
			return
		}
		err := b.Decode(transport.Text, msg, &in)
		checkBotDecodeError(t, err, msg, &in)
		if err != nil {
			return
		}
		// A map, not a struct: encoding/json matches a struct's fields
		// without regard to case, the dialect's members with.
		var m map[string]any
		_ = json.Unmarshal(msg, &m)
		typ, _ := m["type"].(string)
		data, _ := m["data"].(map[string]any)
		switch in.Kind {
		case transport.KindAudio:
			wantBotAudio(t, in.Audio, format)
			content, _ := data["audioContent"].(string)
			if name == "audiostream" {
				content, _ = data["audioData"].(string)
			}
			want, err := base64.StdEncoding.DecodeString(content)
			if err != nil || !bytes.Equal(want, in.Audio) {
				t.Fatalf("decoded %x, but encoding/json sees %q (%v)", in.Audio, content, err)
			}
		case transport.KindMark:
			if name != "jambonz" || typ != "mark" || data["name"] != in.Mark {
				t.Fatalf("%s mark %q from %s", name, in.Mark, msg)
			}
		case transport.KindClear, transport.KindStop:
			if name == "audiostream" || (typ != "killAudio" && typ != "disconnect") {
				t.Fatalf("%s: %v from %s", name, in.Kind, msg)
			}
		case transport.KindIgnore:
		default:
			t.Fatalf("a bot's message decoded as %v", in.Kind)
		}
	})
}
