package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// The bots in these tests are written with gorilla/websocket, a different
// library from the host's, so that a framing quirk shared by both ends
// cannot hide.

// botServer serves serve for every WebSocket a host dials; requests holds
// the URL of each dial.
type botServer struct {
	url      string
	mu       sync.Mutex
	requests []string
	auth     []string // each dial's Authorization header
}

func startBot(t *testing.T, serve func(conn *gorilla.Conn)) *botServer {
	t.Helper()
	b := &botServer{}
	up := gorilla.Upgrader{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.requests = append(b.requests, r.URL.RequestURI())
		b.auth = append(b.auth, r.Header.Get("Authorization"))
		b.mu.Unlock()
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("bot: upgrade: %v", err)
			return
		}
		defer conn.Close()
		serve(conn)
	}))
	t.Cleanup(hs.Close)
	b.url = "ws" + strings.TrimPrefix(hs.URL, "http")
	return b
}

func upstream(t *testing.T, url, dialect string) *server.Upstream {
	t.Helper()
	d, err := transport.LookupDialect(dialect)
	if err != nil {
		t.Fatal(err)
	}
	return &server.Upstream{URL: url, Dialect: d, Format: codec.Telephony, ConnectTimeout: 2 * time.Second}
}

// twilioEvent is a Twilio Media Streams message, either way.
type twilioEvent struct {
	Event          string `json:"event"`
	SequenceNumber string `json:"sequenceNumber"`
	StreamSid      string `json:"streamSid"`
	Start          *struct {
		StreamSid        string            `json:"streamSid"`
		CallSid          string            `json:"callSid"`
		AccountSid       string            `json:"accountSid"`
		Tracks           []string          `json:"tracks"`
		CustomParameters map[string]string `json:"customParameters"`
		MediaFormat      struct {
			Encoding   string `json:"encoding"`
			SampleRate int    `json:"sampleRate"`
			Channels   int    `json:"channels"`
		} `json:"mediaFormat"`
	} `json:"start"`
	Media *struct {
		Track, Chunk, Timestamp, Payload string
	} `json:"media"`
	Mark *struct {
		Name string `json:"name"`
	} `json:"mark"`
	DTMF *struct {
		Digit string `json:"digit"`
	} `json:"dtmf"`
	Stop *struct {
		CallSid string `json:"callSid"`
	} `json:"stop"`
}

func decodeTwilio(t *testing.T, msg []byte) twilioEvent {
	var e twilioEvent
	if err := json.Unmarshal(msg, &e); err != nil {
		t.Errorf("not a Twilio message: %q: %v", msg, err)
	}
	return e
}

func payload(t *testing.T, e twilioEvent) []byte {
	if e.Media == nil {
		t.Errorf("media message without media: %+v", e)
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(e.Media.Payload)
	if err != nil {
		t.Errorf("media payload: %v", err)
	}
	return b
}

func twilioMedia(sid string, ulaw []byte) []byte {
	return []byte(fmt.Sprintf(`{"event":"media","streamSid":%q,"media":{"payload":%q}}`, sid, base64.StdEncoding.EncodeToString(ulaw)))
}

// twilioCallerStart opens a Twilio stream as Twilio does.
func twilioCallerStart(t *testing.T, c *websocket.Conn, params string) {
	t.Helper()
	ctx := context.Background()
	for _, m := range [][]byte{
		[]byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`),
		twilioMsg("start", 1, `"start":{"accountSid":"AC1","streamSid":"MZ00000000000000000000000000000001","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":`+params+`}`),
	} {
		if err := c.Write(ctx, websocket.MessageText, m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRelayThroughATwilioBot places a Twilio call on a route whose bot
// speaks the Twilio dialect: the bot must see what Twilio would send it,
// with the caller's audio through the inbound pipeline byte for byte as
// voxhost run makes it; the caller must hear the bot's answer through the
// outbound pipeline likewise, then the bot's mark, whose acknowledgement
// reaches the bot only once the caller returned it, after the audio.
func TestRelayThroughATwilioBot(t *testing.T) {
	callerAudio := ulawSpeech(1)
	botAnswer := ulawSpeech(1.5)[4000:]
	type botLog struct {
		start               twilioEvent
		events              []string
		audio               []byte
		ackAfterAudio, stop bool
	}
	got := make(chan botLog, 1)
	bot := startBot(t, func(conn *gorilla.Conn) {
		var log botLog
		defer func() { got <- log }()
		answered := false
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			e := decodeTwilio(t, msg)
			log.events = append(log.events, e.Event)
			switch e.Event {
			case "start":
				log.start = e
			case "media":
				log.audio = append(log.audio, payload(t, e)...)
				if len(log.audio) == len(callerAudio) && !answered {
					answered = true
					// As fast as it can, in 100 ms chunks, then a mark.
					for off := 0; off < len(botAnswer); off += 800 {
						conn.WriteMessage(gorilla.TextMessage, twilioMedia(e.StreamSid, botAnswer[off:min(off+800, len(botAnswer))]))
					}
					conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"mark","streamSid":"`+e.StreamSid+`","mark":{"name":"answer-done"}}`))
				}
			case "mark":
				log.ackAfterAudio = answered && e.Mark != nil && e.Mark.Name == "answer-done"
			case "stop":
				log.stop = e.Stop != nil && e.Stop.CallSid == "CA1"
			}
		}
	})
	up := upstream(t, bot.url+"/media/{call_id}?lang={param.lang}", "twilio")
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough"},
		"bot":  {inbound: "gain db=-6", outbound: "gain db=3", upstream: up},
	}, nil)

	c := dial(t, h.url+"/twilio")
	defer c.CloseNow()
	ctx := context.Background()
	twilioCallerStart(t, c, `{"pipeline":"bot","lang":"de"}`)
	go func() {
		for off, seq := 0, 2; off < len(callerAudio); off, seq = off+160, seq+1 {
			msg := twilioMsg("media", seq, fmt.Sprintf(`"media":{"track":"inbound","chunk":"%d","timestamp":"%d","payload":%q}`,
				seq-1, off/8, base64.StdEncoding.EncodeToString(callerAudio[off:off+160])))
			if c.Write(ctx, websocket.MessageText, msg) != nil {
				return
			}
		}
	}()
	var heard []byte
	for {
		_, msg := readMessage(t, c)
		e := decodeTwilio(t, msg)
		if e.StreamSid != "MZ00000000000000000000000000000001" {
			t.Fatalf("message to the caller without its streamSid: %s", msg)
		}
		if e.Event == "media" {
			heard = append(heard, payload(t, e)...)
			continue
		}
		if e.Event != "mark" || e.Mark.Name != "answer-done" {
			t.Fatalf("caller got %s, want media or the bot's mark", msg)
		}
		break
	}
	if want := hosttest.OfflineUlaw(t, "gain db=3", botAnswer); !bytes.Equal(heard, want) {
		t.Fatalf("the caller heard %d bytes before the bot's mark, not the %d of voxhost run through the outbound pipeline", len(heard), len(want))
	}
	// Twilio returns a mark once the audio before it has played.
	if err := c.Write(ctx, websocket.MessageText, twilioMsg("mark", 60, `"mark":{"name":"answer-done"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(metrics(t, h), `voxhost_marks_total{result="played"} 1`) })
	if err := c.Write(ctx, websocket.MessageText, twilioMsg("stop", 61, `"stop":{"accountSid":"AC1","callSid":"CA1"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after stop: %v, want a normal close", err)
	}

	log := <-got
	if s := log.start.Start; s == nil || s.CallSid != "CA1" || s.AccountSid != "AC1" || s.StreamSid != "MZ00000000000000000000000000000001" ||
		s.CustomParameters["lang"] != "de" || s.MediaFormat.Encoding != "audio/x-mulaw" || s.MediaFormat.SampleRate != 8000 || s.MediaFormat.Channels != 1 {
		t.Fatalf("the bot's start message: %+v", log.start.Start)
	}
	if len(log.events) < 2 || log.events[0] != "connected" || log.events[1] != "start" {
		t.Fatalf("the bot's first messages: %v, want connected then start", log.events[:min(len(log.events), 2)])
	}
	if want := hosttest.OfflineUlaw(t, "gain db=-6", callerAudio); !bytes.Equal(log.audio, want) {
		t.Fatalf("the bot got %d bytes of audio, not the %d of voxhost run through the inbound pipeline", len(log.audio), len(want))
	}
	if !log.ackAfterAudio || !log.stop {
		t.Fatalf("mark acknowledged after the audio: %v; stop with the callSid: %v", log.ackAfterAudio, log.stop)
	}
	bot.mu.Lock()
	defer bot.mu.Unlock()
	if len(bot.requests) != 1 || bot.requests[0] != "/media/CA1?lang=de" {
		t.Fatalf("the bot was dialled at %v, want /media/CA1?lang=de from the URL template", bot.requests)
	}
	assertMetric(t, h, `voxhost_calls_total{outcome="completed",protocol="twilio"} 1`)
}

// rawEvent is a text event of the raw protocol and dialect.
type rawEvent struct {
	Event   string `json:"event"`
	Name    string `json:"name"`
	Plugin  string `json:"plugin"`
	HeardMs *int64 `json:"heard_ms"`
}

// feedSilence sends 20 ms of μ-law silence every 20 ms until ctx ends, as
// a caller does while it listens.
func feedSilence(ctx context.Context, c *websocket.Conn) {
	frame := bytes.Repeat([]byte{0xFF}, 160)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if c.Write(ctx, websocket.MessageBinary, frame) != nil {
				return
			}
		}
	}
}

// callerSpeaks dials h as a raw caller, which says 0.6 s of speech, then
// listens, sending silence in real time until the test ends; it returns
// the socket and the speech.
func callerSpeaks(t *testing.T, h *testHost) (*websocket.Conn, []byte) {
	t.Helper()
	c := dial(t, h.url+"/ws")
	t.Cleanup(func() { c.CloseNow() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	speech := ulawSpeech(0.6)
	for off := 0; off < len(speech); off += 160 {
		if err := c.Write(ctx, websocket.MessageBinary, speech[off:off+160]); err != nil {
			t.Fatal(err)
		}
	}
	go feedSilence(ctx, c)
	return c, speech
}

// TestRelayPacesABurstAtRealTime has a bot send ten seconds of audio in
// about 100 ms. A raw caller has no buffer of its own, so the host paces
// the audio: the caller must get every frame, byte for byte, spread over
// ten seconds: no less than 9.5 s (paced, not passed on as it came), and
// no more than 15 s (a machine loaded by other tests wakes the playout
// late, and past half a second of lateness it starts its schedule again).
func TestRelayPacesABurstAtRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("ten seconds of real-time audio")
	}
	answer := ulawSpeech(10)
	bot := startBot(t, func(conn *gorilla.Conn) {
		if _, _, err := conn.ReadMessage(); err != nil { // start
			return
		}
		for off := 0; off < len(answer); off += 8000 {
			conn.WriteMessage(gorilla.BinaryMessage, answer[off:off+8000])
			time.Sleep(10 * time.Millisecond)
		}
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	})
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough", outbound: "passthrough", upstream: upstream(t, bot.url, "raw")},
	}, nil)
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go feedSilence(ctx, c)
	var heard []byte
	var first, last time.Time
	for len(heard) < len(answer) {
		typ, msg := readMessage(t, c)
		if typ != websocket.MessageBinary {
			continue
		}
		if first.IsZero() {
			first = time.Now()
		}
		last = time.Now()
		if len(msg) != 160 {
			t.Fatalf("a paced frame of %d bytes, want 20 ms", len(msg))
		}
		heard = append(heard, msg...)
	}
	if want := hosttest.OfflineUlaw(t, "passthrough", answer); !bytes.Equal(heard, want) {
		t.Fatal("the paced audio differs from the bot's")
	}
	// The first frame goes at once; the last 9.98 s later.
	if took := last.Sub(first); took < 9500*time.Millisecond || took > 15*time.Second {
		t.Fatalf("10 s of audio reached the caller over %v, want about 10 s", took)
	}
	t.Logf("10 s of audio sent by the bot in ~100 ms reached the caller over %v", last.Sub(first))
}

// TestAFullPlayoutQueueHoldsTheBotBack has a bot send three seconds at
// once to a call whose playout queue holds one: the bot must be held back
// (counted as an overflow) and the caller must still hear all of it, in
// order.
func TestAFullPlayoutQueueHoldsTheBotBack(t *testing.T) {
	answer := ulawSpeech(3)
	bot := startBot(t, func(conn *gorilla.Conn) {
		conn.ReadMessage()
		conn.WriteMessage(gorilla.BinaryMessage, answer)
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	})
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough", outbound: "passthrough", upstream: upstream(t, bot.url, "raw")},
	}, func(o *server.Options) { o.PlayoutQueue = time.Second })
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go feedSilence(ctx, c)
	var heard []byte
	for len(heard) < len(answer) {
		if typ, msg := readMessage(t, c); typ == websocket.MessageBinary {
			heard = append(heard, msg...)
		}
	}
	if want := hosttest.OfflineUlaw(t, "passthrough", answer); !bytes.Equal(heard, want) {
		t.Fatal("the caller did not hear the whole answer in order")
	}
	if strings.Contains(metrics(t, h), "\nvoxhost_playout_overflows_total 0\n") {
		t.Fatal("a bot that sent three times what the queue holds was never held back")
	}
}

// TestBargeInDropsQueuedAudio has the bot queue five seconds of one sound
// and a mark; the caller presses a key, which an inbound plugin turns into
// a clear. The caller must get the clear, then none of the queued sound;
// the bot must hear of the barge-in with what the caller heard, get its
// mark back as cleared, and its next answer must play; the outbound
// plugin must get EventClear. With a queue of 400 ms the bot reader is
// held back in the middle of the five-second message when the caller
// presses the key: the rest of that message must not play either.
func TestBargeInDropsQueuedAudio(t *testing.T) {
	for _, queue := range []time.Duration{0, 400 * time.Millisecond} {
		t.Run(fmt.Sprintf("queue=%v", queue), func(t *testing.T) { bargeIn(t, queue) })
	}
}

func bargeIn(t *testing.T, queue time.Duration) {
	soundA, soundB := bytes.Repeat([]byte{0x11}, 160), bytes.Repeat([]byte{0x22}, 160)
	heardMs := make(chan int64, 1)
	marks := make(chan string, 4)
	bot := startBot(t, func(conn *gorilla.Conn) {
		if _, _, err := conn.ReadMessage(); err != nil { // start
			return
		}
		conn.WriteMessage(gorilla.BinaryMessage, bytes.Repeat(soundA, 250))
		conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"mark","name":"a-done"}`))
		for {
			typ, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if typ != gorilla.TextMessage {
				continue
			}
			var e rawEvent
			json.Unmarshal(msg, &e)
			switch e.Event {
			case "clear":
				if e.HeardMs != nil {
					heardMs <- *e.HeardMs
				}
				conn.WriteMessage(gorilla.BinaryMessage, bytes.Repeat(soundB, 50))
				conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"mark","name":"b-done"}`))
			case "mark":
				marks <- e.Name
			}
		}
	})
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: testdataPlugin("clear_on_dtmf"), outbound: testdataPlugin("on_clear"), upstream: upstream(t, bot.url, "raw")},
	}, func(o *server.Options) { o.PlayoutQueue = queue })
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go feedSilence(ctx, c)
	framesA, framesB, cleared, sawPluginClear := 0, 0, false, false
	for framesB < 50 || !sawPluginClear {
		typ, msg := readMessage(t, c)
		if typ == websocket.MessageText {
			var e rawEvent
			json.Unmarshal(msg, &e)
			switch {
			case e.Event == "clear":
				cleared = true
			case e.Event == "plugin" && e.Name == "cleared":
				sawPluginClear = true
			}
			continue
		}
		switch {
		case bytes.Equal(msg, soundA) && !cleared:
			if framesA++; framesA == 10 {
				if err := c.Write(ctx, websocket.MessageText, []byte(`{"event":"dtmf","digit":"1"}`)); err != nil {
					t.Fatal(err)
				}
			}
		case bytes.Equal(msg, soundB) && cleared:
			framesB++
		default:
			t.Fatalf("after %d frames of the first answer and %d of the second (cleared: %v), a frame of %x…", framesA, framesB, cleared, msg[:4])
		}
	}
	if framesA >= 250 {
		t.Fatal("the whole first answer played: no barge-in")
	}
	select {
	case ms := <-heardMs:
		// The caller heard at least the ten frames before its key, and
		// surely not the five seconds.
		if ms < 150 || ms > 2000 {
			t.Fatalf("the bot was told the caller heard %d ms, want about %d", ms, framesA*20)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the bot heard of no barge-in")
	}
	for _, want := range []string{"a-done", "b-done"} {
		select {
		case got := <-marks:
			if got != want {
				t.Fatalf("mark acknowledgement %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no acknowledgement of %s", want)
		}
	}
	assertMetric(t, h, `voxhost_barge_ins_total{source="plugin"} 1`)
	if queue == 0 {
		// With the small queue the bot's first mark was still behind the
		// message being cut, not queued, when the queue was cleared.
		assertMetric(t, h, `voxhost_marks_total{result="cleared"} 1`)
	}
}

// TestRelayFailures covers each way a bot leg can fail; each must end the
// caller's call with a reason it can act on and a counted outcome, or with
// on_failure: echo, keep the call as an echo.
func TestRelayFailures(t *testing.T) {
	silentListener := func(t *testing.T) string {
		// Accepts TCP and never answers the handshake.
		l := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { time.Sleep(time.Second) }))
		t.Cleanup(l.Close)
		return "ws" + strings.TrimPrefix(l.URL, "http")
	}
	closedPort := func(t *testing.T) string {
		l := httptest.NewServer(http.NotFoundHandler())
		url := "ws" + strings.TrimPrefix(l.URL, "http")
		l.Close()
		return url
	}
	for _, tc := range []struct {
		name    string
		url     func(t *testing.T) string
		timeout time.Duration
		code    websocket.StatusCode
		reason  string // what the caller hears
		outcome string
		why     string // voxhost_upstream_failures_total's reason; the log says it in words
	}{
		{"refused", closedPort, 0, websocket.StatusTryAgainLater, botUnreachable, "bot_unreachable", "refused"},
		{"slow to answer", silentListener, 200 * time.Millisecond, websocket.StatusTryAgainLater, botUnreachable, "bot_unreachable", "connect_timeout"},
		{"handshake refused", func(t *testing.T) string {
			l := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusForbidden) }))
			t.Cleanup(l.Close)
			return "ws" + strings.TrimPrefix(l.URL, "http")
		}, 0, websocket.StatusTryAgainLater, botUnreachable, "bot_unreachable", "handshake"},
		{"malformed", func(t *testing.T) string {
			return startBot(t, func(conn *gorilla.Conn) {
				conn.ReadMessage()
				conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"media","media":{"payload":"!!"}}`))
				conn.ReadMessage()
			}).url
		}, 0, websocket.StatusInternalError, "malformed message", "bot_malformed", "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := upstream(t, tc.url(t), "twilio")
			up.ConnectTimeout = tc.timeout
			h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: up}}, nil)
			c := dial(t, h.url+"/twilio")
			defer c.CloseNow()
			twilioCallerStart(t, c, `{}`)
			ctx := context.Background()
			c.Write(ctx, websocket.MessageText, twilioMsg("media", 2, `"media":{"payload":"`+base64.StdEncoding.EncodeToString(make([]byte, 160))+`"}`))
			_, _, err := c.Read(ctx)
			var ce websocket.CloseError
			if !asCloseError(err, &ce) || ce.Code != tc.code || !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("the caller's call ended with %v, want %v with %q", err, tc.code, tc.reason)
			}
			assertMetric(t, h, fmt.Sprintf(`voxhost_calls_total{outcome=%q,protocol="twilio"} 1`, tc.outcome))
			assertMetric(t, h, fmt.Sprintf(`voxhost_upstream_failures_total{protocol="twilio",reason=%q} 1`, tc.why))
		})
	}

	t.Run("echo on failure", func(t *testing.T) {
		up := upstream(t, closedPort(t), "raw")
		up.OnFailure = server.FailEcho
		h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "gain db=-6", outbound: "gain db=3", upstream: up}}, nil)
		ulaw := ulawSpeech(0.4)
		got, _, err := stream(h.url+"/ws", ulaw)
		if err != nil {
			t.Fatal(err)
		}
		if want := hosttest.OfflineUlaw(t, "gain db=-6 | gain db=3", ulaw); !bytes.Equal(got, want) {
			t.Fatal("with on_failure: echo, the caller must hear itself through both pipelines")
		}
		assertMetric(t, h, `voxhost_upstream_failures_total{protocol="raw",reason="refused"} 1`)
	})

	t.Run("bot hangs up after its last words", func(t *testing.T) {
		words := bytes.Repeat([]byte{0x33}, 160*10)
		bot := startBot(t, func(conn *gorilla.Conn) {
			conn.ReadMessage()
			conn.WriteMessage(gorilla.BinaryMessage, words)
			conn.WriteMessage(gorilla.CloseMessage, gorilla.FormatCloseMessage(gorilla.CloseNormalClosure, "bye"))
			time.Sleep(100 * time.Millisecond)
		})
		h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: upstream(t, bot.url, "raw")}}, nil)
		c := dial(t, h.url+"/ws")
		defer c.CloseNow()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go feedSilence(ctx, c)
		var heard []byte
		for {
			_, msg, err := c.Read(ctx)
			if err != nil {
				if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
					t.Fatalf("after the bot hung up: %v, want a normal close", err)
				}
				break
			}
			heard = append(heard, msg...)
		}
		if !bytes.Equal(heard, words) {
			t.Fatalf("the caller heard %d bytes of the bot's last %d before the call ended", len(heard), len(words))
		}
		assertMetric(t, h, `voxhost_calls_total{outcome="bot_hangup",protocol="raw"} 1`)
	})

	t.Run("caller hangs up", func(t *testing.T) {
		stopped := make(chan bool, 1)
		bot := startBot(t, func(conn *gorilla.Conn) {
			sawStop := false
			for {
				_, msg, err := conn.ReadMessage()
				if err != nil {
					stopped <- sawStop && gorilla.IsCloseError(err, gorilla.CloseNormalClosure)
					return
				}
				sawStop = sawStop || strings.Contains(string(msg), `"event":"stop"`)
			}
		})
		h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: upstream(t, bot.url, "raw")}}, nil)
		c := dial(t, h.url+"/ws")
		c.Write(context.Background(), websocket.MessageBinary, make([]byte, 160))
		c.CloseNow() // vanishes without a close frame
		select {
		case ok := <-stopped:
			if !ok {
				t.Fatal("the bot must get stop and a normal close when the caller hangs up")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the bot never heard the caller hang up")
		}
		assertMetric(t, h, `voxhost_calls_total{outcome="disconnected",protocol="raw"} 1`)
	})

	t.Run("caller stops reading", func(t *testing.T) {
		// A bot that talks without end to a caller that reads nothing (and
		// takes any amount ahead): the writes to the caller block, which
		// holds the bot back, and the call ends.
		quit := make(chan struct{})
		bot := startBot(t, func(conn *gorilla.Conn) {
			conn.ReadMessage()
			chunk := make([]byte, 8000)
			for conn.WriteMessage(gorilla.BinaryMessage, chunk) == nil {
				select {
				case <-quit:
					return // the host cuts the socket within 2 s; tests after this one count allocations
				default:
				}
			}
		})
		t.Cleanup(func() { close(quit) })
		h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: upstream(t, bot.url, "raw")}},
			func(o *server.Options) { o.StallTimeout, o.SendAhead = 300*time.Millisecond, time.Hour })
		var before, after runtimeHeap
		before.read()
		c := dial(t, h.url+"/twilio")
		defer c.CloseNow()
		twilioCallerStart(t, c, `{}`)
		assertMetric(t, h, `voxhost_calls_total{outcome="caller_stalled",protocol="twilio"} 1`)
		after.read()
		if grew := after.inUse - before.inUse; grew > 16<<20 {
			t.Fatalf("the host's heap grew %d MiB while the caller did not read", grew>>20)
		}
	})

	t.Run("bot stops reading", func(t *testing.T) {
		hold := make(chan struct{})
		defer close(hold)
		bot := startBot(t, func(conn *gorilla.Conn) { <-hold })
		h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: upstream(t, bot.url, "raw")}},
			func(o *server.Options) { o.StallTimeout = 300 * time.Millisecond })
		c := dial(t, h.url+"/ws")
		defer c.CloseNow()
		ctx := context.Background()
		frame := make([]byte, 800) // 100 ms a message, the most a frame may hold
		var before, after runtimeHeap
		before.read()
		var err error
		for i := 0; i < 100000 && err == nil; i++ {
			err = c.Write(ctx, websocket.MessageBinary, frame)
		}
		_, _, rerr := c.Read(ctx)
		var ce websocket.CloseError
		if !asCloseError(rerr, &ce) || ce.Code != websocket.StatusInternalError || !strings.Contains(ce.Reason, "took no message") {
			t.Fatalf("a bot that stopped reading: the caller's call ended with %v, want 1011 naming the stall", rerr)
		}
		after.read()
		if grew := after.inUse - before.inUse; grew > 16<<20 {
			t.Fatalf("the host's heap grew %d MiB while the bot did not read", grew>>20)
		}
		assertMetric(t, h, `voxhost_calls_total{outcome="bot_stalled",protocol="raw"} 1`)
	})
}

func asCloseError(err error, ce *websocket.CloseError) bool { return errors.As(err, ce) }

// runtimeHeap is the host process's heap in use, after a collection.
type runtimeHeap struct{ inUse int64 }

func (h *runtimeHeap) read() {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h.inUse = int64(ms.HeapInuse)
}

// TestRelayToAnOpenAIRealtimeModel relays a call to a local server that
// follows the Realtime API's published event schema (openai-python's
// types/realtime; the real API cannot be reached from here). The model
// must get session.update with the route's format and the caller's audio
// as input_audio_buffer.append; its response.output_audio.delta must play
// to the caller; its input_audio_buffer.speech_started must clear the
// caller's playout and be answered with conversation.item.truncate at what
// the caller heard, after which the truncated item's deltas are dropped.
func TestRelayToAnOpenAIRealtimeModel(t *testing.T) {
	soundA, soundB := bytes.Repeat([]byte{0x11}, 800), bytes.Repeat([]byte{0x22}, 800)
	callerHeard := make(chan struct{})
	type modelLog struct {
		inputFormat string
		audio       []byte
		truncate    map[string]any
		cancels     int
	}
	got := make(chan modelLog, 1)
	bot := startBot(t, func(conn *gorilla.Conn) {
		var log modelLog
		defer func() { got <- log }()
		var writeMu sync.Mutex // gorilla allows one writer at a time
		send := func(v map[string]any) {
			b, _ := json.Marshal(v)
			writeMu.Lock()
			defer writeMu.Unlock()
			conn.WriteMessage(gorilla.TextMessage, b)
		}
		delta := func(item string, audio []byte) {
			send(map[string]any{"type": "response.output_audio.delta", "response_id": "resp_1", "item_id": item,
				"output_index": 0, "content_index": 0, "delta": base64.StdEncoding.EncodeToString(audio)})
		}
		answered := false
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var e struct {
				Type    string          `json:"type"`
				Audio   string          `json:"audio"`
				Session json.RawMessage `json:"session"`
			}
			json.Unmarshal(msg, &e)
			switch e.Type {
			case "session.update":
				var s struct {
					Audio struct {
						Input struct {
							Format struct {
								Type string `json:"type"`
							} `json:"format"`
						} `json:"input"`
					} `json:"audio"`
				}
				json.Unmarshal(e.Session, &s)
				log.inputFormat = s.Audio.Input.Format.Type
				send(map[string]any{"type": "session.updated", "event_id": "ev_1", "session": map[string]any{"type": "realtime"}})
			case "input_audio_buffer.append":
				a, _ := base64.StdEncoding.DecodeString(e.Audio)
				log.audio = append(log.audio, a...)
				if len(log.audio) >= 4000 && !answered {
					answered = true
					send(map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_1", "status": "in_progress"}})
					for i := 0; i < 30; i++ {
						delta("item_1", soundA)
					}
					go func() {
						<-callerHeard
						send(map[string]any{"type": "input_audio_buffer.speech_started", "audio_start_ms": 900, "item_id": "item_in_2"})
					}()
				}
			case "conversation.item.truncate":
				json.Unmarshal(msg, &log.truncate)
				delta("item_1", soundA) // sent before the model saw the truncate: dropped
				send(map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_2", "status": "in_progress"}})
				for i := 0; i < 5; i++ {
					delta("item_2", soundB)
				}
			case "response.cancel":
				log.cancels++
			}
		}
	})
	up := upstream(t, bot.url+"/v1/realtime?model=gpt-realtime", "openai-realtime")
	up.Header = http.Header{"Authorization": {"Bearer test-key"}}
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: up}}, nil)
	c, callerAudio := callerSpeaks(t, h)
	framesA, framesB, cleared := 0, 0, false
	for framesB < 25 {
		typ, msg := readMessage(t, c)
		if typ == websocket.MessageText {
			cleared = cleared || strings.Contains(string(msg), `"event":"clear"`)
			continue
		}
		switch {
		case bytes.Equal(msg, soundA[:160]) && !cleared:
			if framesA++; framesA == 15 {
				close(callerHeard)
			}
		case bytes.Equal(msg, soundB[:160]) && cleared:
			framesB++
		default:
			t.Fatalf("after %d frames of item_1 and %d of item_2 (cleared: %v), a frame of %x…", framesA, framesB, cleared, msg[:4])
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	log := <-got
	if log.inputFormat != "audio/pcmu" {
		t.Fatalf("session.update's input format %q, want audio/pcmu for a μ-law route", log.inputFormat)
	}
	if want := hosttest.OfflineUlaw(t, "passthrough", callerAudio); !bytes.HasPrefix(log.audio, want) {
		t.Fatal("the model did not get the caller's audio first, byte for byte")
	}
	end, _ := log.truncate["audio_end_ms"].(float64)
	if log.truncate["item_id"] != "item_1" || log.truncate["content_index"] != float64(0) || end < 250 || end > 1500 {
		t.Fatalf("truncate %v, want item_1 at about %d ms", log.truncate, framesA*20)
	}
	if log.cancels != 0 {
		t.Fatalf("%d response.cancel: the model detected the speech itself and cancels its own response", log.cancels)
	}
	bot.mu.Lock()
	defer bot.mu.Unlock()
	if len(bot.auth) != 1 || bot.auth[0] != "Bearer test-key" || bot.requests[0] != "/v1/realtime?model=gpt-realtime" {
		t.Fatalf("dialled %v with Authorization %v", bot.requests, bot.auth)
	}
}
