package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

// What the end-to-end tests of the JSON carriers (telnyx, plivo, exotel
// and the auto endpoint) share: a caller that speaks a carrier's protocol
// to the host, a bot that speaks it as a bot does, and the checks.

// carrierMsg is a message of any of the JSON carriers, either way.
type carrierMsg struct {
	Event     string `json:"event"`
	StreamID  string `json:"stream_id"` // Telnyx's
	StreamSid string `json:"stream_sid"`
	PlivoID   string `json:"streamId"`
	TwilioSid string `json:"streamSid"`
	Name      string `json:"name"` // Plivo's checkpoint and playedStream
	Media     *struct {
		Payload     []byte `json:"payload"` // encoding/json decodes base64
		ContentType string `json:"contentType"`
		SampleRate  int    `json:"sampleRate"`
	} `json:"media"`
	Mark *struct {
		Name string `json:"name"`
	} `json:"mark"`
	Start json.RawMessage `json:"start"`
}

func decodeCarrier(t *testing.T, msg []byte) carrierMsg {
	t.Helper()
	var m carrierMsg
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("not a carrier's message: %q: %v", msg, err)
	}
	return m
}

// markName is the name of a mark, checkpoint or playedStream.
func (m carrierMsg) markName() string {
	if m.Mark != nil {
		return m.Mark.Name
	}
	return m.Name
}

// id is the stream id the message carries, under any carrier's name.
func (m carrierMsg) id() string { return m.StreamID + m.StreamSid + m.PlivoID + m.TwilioSid }

// carrierCaller is a carrier as a test's caller plays it.
type carrierCaller struct {
	path  string   // the endpoint, with its query
	open  []string // the messages that start the stream
	media func(audio []byte) string
	dtmf  string // a key press
	stop  string // "" where the stream ends with the socket's close
	// in is the audio the carrier sends, out what it takes back; frameMs
	// how much one media message carries.
	in, out codec.Format
	frameMs int
	// mediaEvent and clearEvent name the host's audio and clear; id is the
	// stream id they must carry, "" for a carrier whose take none.
	mediaEvent, clearEvent, id string
}

// carrierSpeech is a second of the speech-like signal in f.
func carrierSpeech(f codec.Format) []byte {
	pcm := signal.Speech(f.Rate, 1)
	out := make([]byte, len(pcm))
	return out[:f.Encode(out, pcm)]
}

// carrierOffline is what the pipeline spec makes of audio in the format in, as
// voxhost run makes it of μ-law, then carried to a caller that takes out:
// the expectation a live call in any codec is compared against. The
// pipeline's output is encoded in the caller's format, and a session that
// sends another one converts it sample for sample, as the host does.
func carrierOffline(t *testing.T, spec string, in, out codec.Format, audio []byte) []byte {
	t.Helper()
	var res []byte
	if in == codec.Telephony {
		res = hosttest.OfflineUlaw(t, spec, audio)
	} else {
		pcm := make([]byte, len(audio)/in.SampleBytes()*2)
		in.Decode(pcm, audio)
		p := hosttest.Pipeline(t, hosttest.Catalog(t), spec, pipeline.CallConfig{InputRate: in.Rate, MaxFrameMs: 100})
		pcm = hosttest.Process(t, p, pcm, 20*in.Rate/1000*2)
		res = make([]byte, len(pcm))
		res = res[:in.Encode(res, pcm)]
	}
	if out == in {
		return res
	}
	pcm := make([]byte, 2*len(res))
	pcm = pcm[:in.Decode(pcm, res)]
	enc := make([]byte, len(pcm))
	return enc[:out.Encode(enc, pcm)]
}

// carrierEcho places a call in the carrier's protocol on an echo route
// picked by its start's custom parameters ("pipeline": "bot"): the caller
// must hear its audio through the route byte for byte as an offline run
// makes it, in the carrier's own media messages with its stream id; a key
// must reach the plugins (clear_on_dtmf answers it with a clear, which
// must come back as the carrier's own); the stop, or the close, must end
// the call in order.
func carrierEcho(t *testing.T, c carrierCaller) {
	h := newHost(t, map[string]string{"main": "passthrough", "bot": "gain db=-6 | " + testdataPlugin("clear_on_dtmf")}, nil)
	audio := carrierSpeech(c.in)
	want := carrierOffline(t, "gain db=-6", c.in, c.out, audio)
	conn := dial(t, h.url+c.path)
	defer conn.CloseNow()
	ctx := context.Background()
	send := func(msg string) {
		t.Helper()
		if err := conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	reply := func() carrierMsg {
		t.Helper()
		typ, msg := readMessage(t, conn)
		if typ != websocket.MessageText {
			t.Fatalf("the carrier takes text messages only; got %v", typ)
		}
		m := decodeCarrier(t, msg)
		if m.id() != c.id {
			t.Fatalf("a message with stream id %q, want %q: %s", m.id(), c.id, msg)
		}
		return m
	}
	for _, m := range c.open {
		send(m)
	}
	step := c.frameMs * c.in.BytesPerMs()
	var got []byte
	for i, off := 0, 0; off < len(audio); i, off = i+1, off+step {
		send(c.media(audio[off:min(off+step, len(audio))]))
		r := reply()
		if r.Event != c.mediaEvent || r.Media == nil {
			t.Fatalf("got %q, want %s", r.Event, c.mediaEvent)
		}
		got = append(got, r.Media.Payload...)
		if i == 3 {
			send(c.dtmf)
			if r := reply(); r.Event != c.clearEvent {
				t.Fatalf("after a key: got %q, want the plugin's clear as %s", r.Event, c.clearEvent)
			}
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the caller heard %d bytes that differ from the %d of an offline run", len(got), len(want))
	}
	if c.stop == "" {
		conn.Close(websocket.StatusNormalClosure, "")
		waitFor(t, func() bool { return h.ActiveCalls() == 0 })
		return
	}
	send(c.stop)
	if code, _ := closeOf(t, conn); code != websocket.StatusNormalClosure {
		t.Fatalf("after stop: close %v, want a normal close", code)
	}
}

// carrierMalformed is a stream a carrier's caller breaks, and the close that
// must end it.
type carrierMalformed struct {
	name   string
	path   string
	msgs   []string
	binary bool // the last message goes as binary
	code   websocket.StatusCode
	reason string // a part of the close reason
}

// carrierMalformedEndsOnlyThatCall runs each case while a raw call is up: each
// must end with its close code and reason, and the raw call go on.
func carrierMalformedEndsOnlyThatCall(t *testing.T, cases []carrierMalformed) {
	h := newHost(t, map[string]string{"main": "passthrough", "bot": "passthrough"}, nil)
	bystander := dial(t, h.url+"/ws")
	defer bystander.CloseNow()
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, h.url+tc.path)
			defer c.CloseNow()
			for i, m := range tc.msgs {
				typ := websocket.MessageText
				if tc.binary && i == len(tc.msgs)-1 {
					typ = websocket.MessageBinary
				}
				if err := c.Write(ctx, typ, []byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			code, reason := closeOf(t, c)
			if code != tc.code || !strings.Contains(reason, tc.reason) {
				t.Fatalf("close %v %q, want %v with %q", code, reason, tc.code, tc.reason)
			}
		})
	}
	if err := bystander.Write(ctx, websocket.MessageBinary, stamp(1, 1)); err != nil {
		t.Fatal(err)
	}
	if _, msg := readMessage(t, bystander); string(msg) != string(stamp(1, 1)) {
		t.Fatal("the bystander call was disturbed")
	}
}

// carrierBot is a bot written for a carrier, as a test plays it.
type carrierBot struct {
	dialect string
	format  codec.Format
	// media and mark render what the bot sends; ackEvent names the host's
	// answer to its mark, stopEvent its stop ("" where the close ends
	// the stream).
	media       func(audio []byte) string
	mark        func(name string) string
	ackEvent    string
	startEvent  string // the host's message that starts the stream
	stopEvent   string
	checkStart  func(t *testing.T, start carrierMsg)
	callerQuery string // the raw caller's ?codec=&rate=, for the bot's format
}

// carrierRelay relays a raw call in the bot's format to a bot that speaks
// the carrier's dialect: the bot echoes every media message back in its
// carrier's form and sends a mark once it has all of the caller's audio.
// The caller must hear its own audio back byte for byte (passthrough both
// ways), the bot must get the carrier's start, all the audio, the
// acknowledgement of its mark once the audio before it has played, and
// the carrier's stop (or the close).
func carrierRelay(t *testing.T, b carrierBot) {
	audio := carrierSpeech(b.format)
	// Both legs decode and encode what they carry: μ-law's two zeros
	// become one, as through any passthrough.
	want := carrierOffline(t, "passthrough", b.format, b.format, audio)
	type botLog struct {
		start, acked, stopped bool
		audio                 []byte
	}
	got := make(chan botLog, 1)
	bot := startBot(t, func(conn *gorilla.Conn) {
		var log botLog
		defer func() { got <- log }()
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				log.stopped = log.stopped || b.stopEvent == ""
				return
			}
			m := decodeCarrier(t, msg)
			switch m.Event {
			case b.startEvent:
				b.checkStart(t, m)
				log.start = true
			case "media":
				if m.Media == nil {
					t.Errorf("media without media: %s", msg)
					return
				}
				had := len(log.audio)
				log.audio = append(log.audio, m.Media.Payload...)
				conn.WriteMessage(gorilla.TextMessage, []byte(b.media(m.Media.Payload)))
				if had < len(audio) && len(log.audio) >= len(audio) {
					conn.WriteMessage(gorilla.TextMessage, []byte(b.mark("all-of-it")))
				}
			case b.ackEvent:
				log.acked = log.acked || m.markName() == "all-of-it" && len(log.audio) >= len(audio)
			case b.stopEvent:
				log.stopped = true
			}
		}
	})
	u := upstream(t, bot.url, b.dialect)
	u.Format = b.format
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough", outbound: "passthrough", upstream: u},
	}, func(o *server.Options) { o.SetupWait = time.Minute })
	c := dial(t, h.url+"/ws"+b.callerQuery)
	defer c.CloseNow()
	ctx := context.Background()
	step := 20 * b.format.BytesPerMs()
	for off := 0; off < len(audio); off += step {
		if err := c.Write(ctx, websocket.MessageBinary, audio[off:min(off+step, len(audio))]); err != nil {
			t.Fatal(err)
		}
	}
	var heard []byte
	for len(heard) < len(audio) {
		if typ, msg := readMessage(t, c); typ == websocket.MessageBinary {
			heard = append(heard, msg...)
		}
	}
	if !bytes.Equal(heard, want) {
		t.Fatal("the caller did not hear its audio back through the bot byte for byte")
	}
	waitFor(t, func() bool { return strings.Contains(metrics(t, h), `voxhost_marks_total{result="played"} 1`) })
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"event":"stop"}`)); err != nil {
		t.Fatal(err)
	}
	if code, _ := closeOf(t, c); code != websocket.StatusNormalClosure {
		t.Fatalf("after stop: close %v", code)
	}
	log := <-got
	if !log.start || !bytes.Equal(log.audio, want) || !log.acked || !log.stopped {
		t.Fatalf("the bot: start %v, %d of %d bytes of audio as sent %v, mark acknowledged after it %v, stopped %v",
			log.start, len(log.audio), len(want), bytes.Equal(log.audio, want), log.acked, log.stopped)
	}
}

// carrierStart decodes a start object.
func carrierStart(t *testing.T, m carrierMsg, v any) {
	t.Helper()
	if err := json.Unmarshal(m.Start, v); err != nil {
		t.Errorf("start %s: %v", m.Start, err)
	}
}
