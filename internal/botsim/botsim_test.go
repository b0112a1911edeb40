package botsim_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/internal/botsim"
	"github.com/voxhost/voxhost/internal/signal"
)

func dial(t *testing.T, url string, header http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

// ctx bounds every read and wait of a test, so that a bug fails it rather
// than hanging it.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func send(t *testing.T, conn *websocket.Conn, msg string) {
	t.Helper()
	if err := conn.Write(ctx(t), websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

// event reads the next text message as JSON.
func event(t *testing.T, conn *websocket.Conn) map[string]any {
	t.Helper()
	return readJSON(t, conn, websocket.MessageText)
}

// readJSON reads the next message, of type want, as JSON.
func readJSON(t *testing.T, conn *websocket.Conn, want websocket.MessageType) map[string]any {
	t.Helper()
	typ, msg, err := conn.Read(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if typ != want || json.Unmarshal(msg, &m) != nil {
		t.Fatalf("want a JSON %v message, got %v %.80q", want, typ, msg)
	}
	return m
}

// waitCall waits until the only call satisfies cond and returns it.
func waitCall(t *testing.T, sim *botsim.Sim, cond func(c botsim.Call) bool) botsim.Call {
	t.Helper()
	calls, err := sim.Wait(ctx(t), func(calls []botsim.Call) bool { return len(calls) == 1 && cond(calls[0]) })
	if err != nil {
		t.Fatalf("%v; calls: %+v", err, calls)
	}
	return calls[0]
}

// Twilio's opening messages, as its docs show them.
const (
	twilioConnected = `{"event":"connected","protocol":"Call","version":"1.0.0"}`
	twilioStart     = `{"event":"start","sequenceNumber":"1","start":{"accountSid":"AC123","streamSid":"MZ42","callSid":"CA7",` +
		`"tracks":["inbound"],"customParameters":{"route":"relay"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}},"streamSid":"MZ42"}`
)

func twilioMedia(n int, frame []byte) string {
	return fmt.Sprintf(`{"event":"media","sequenceNumber":"%d","media":{"track":"inbound","chunk":"%d","timestamp":"%d","payload":%q},"streamSid":"MZ42"}`,
		n+2, n+1, 20*n, base64.StdEncoding.EncodeToString(frame))
}

// twilioPayload returns a media message's audio, or nil for another event.
func twilioPayload(t *testing.T, m map[string]any) []byte {
	t.Helper()
	if m["event"] != "media" {
		return nil
	}
	if m["streamSid"] != "MZ42" {
		t.Fatalf("media for stream %v", m["streamSid"])
	}
	b, err := base64.StdEncoding.DecodeString(m["media"].(map[string]any)["payload"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func frames(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte(0x10 + i)}, size)
	}
	return out
}

func TestTwilioEchoesAfterTheDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	sim, url := botsim.Start(t, botsim.Config{Mode: botsim.Echo, Delay: delay})
	conn := dial(t, url+"/twilio?call=CA7", http.Header{"X-Test": {"yes"}})
	send(t, conn, twilioConnected)
	send(t, conn, twilioStart)
	in := frames(5, 160)
	sent := time.Now()
	for i, f := range in {
		send(t, conn, twilioMedia(i, f))
	}
	send(t, conn, `{"event":"dtmf","streamSid":"MZ42","sequenceNumber":"9","dtmf":{"track":"inbound_track","digit":"5"}}`)
	for i, f := range in {
		got := twilioPayload(t, event(t, conn))
		if i == 0 && time.Since(sent) < delay {
			t.Errorf("first echo after %v, before the %v delay", time.Since(sent), delay)
		}
		if !bytes.Equal(got, f) {
			t.Fatalf("echo %d: %x, want %x", i, got, f)
		}
	}
	send(t, conn, `{"event":"stop","sequenceNumber":"10","streamSid":"MZ42","stop":{"accountSid":"AC123","callSid":"CA7"}}`)
	if _, _, err := conn.Read(ctx(t)); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after stop: %v, want the bot to close normally", err)
	}
	c := waitCall(t, sim, func(c botsim.Call) bool { return !c.Live })
	if c.Err != "" || !c.Stopped || c.DTMF != "5" || c.AudioIn != 800 || c.AudioOut != 800 || c.AudioMessages != 5 {
		t.Errorf("record: err %q stopped %v dtmf %q audio in %d out %d in %d messages", c.Err, c.Stopped, c.DTMF, c.AudioIn, c.AudioOut, c.AudioMessages)
	}
	if c.Start == nil || c.Start.StreamID != "MZ42" || c.Start.CallID != "CA7" || c.Start.Params["route"] != "relay" {
		t.Errorf("start: %+v", c.Start)
	}
	if c.Protocol != botsim.ProtocolTwilio || c.URL != "/twilio?call=CA7" || c.Header.Get("X-Test") != "yes" || c.Format != codec.Telephony {
		t.Errorf("call: protocol %s url %s header %v format %v", c.Protocol, c.URL, c.Header, c.Format)
	}
	if !bytes.Equal(c.Audio, bytes.Join(in, nil)) {
		t.Error("recorded audio differs from what was sent")
	}
	var types []string
	for _, e := range c.Events {
		types = append(types, e.Type)
	}
	if got := strings.Join(types, " "); got != "connected start dtmf stop" {
		t.Errorf("events %q", got)
	}
}

func TestTwilioSpeaksThenMarks(t *testing.T) {
	speech := signal.Speech(8000, 0.1) // 800 samples: five 20 ms chunks
	sim, url := botsim.Start(t, botsim.Config{Mode: botsim.Speak, Speech: botsim.Speech{PCM: speech, Rate: 8000, Name: "hello"}})
	conn := dial(t, url+"/twilio", nil)
	send(t, conn, twilioConnected)
	send(t, conn, twilioStart)
	var audio []byte
	chunks := 0
	for {
		m := event(t, conn)
		if m["event"] == "mark" {
			if name := m["mark"].(map[string]any)["name"]; name != "hello" || m["streamSid"] != "MZ42" {
				t.Fatalf("mark %v", m)
			}
			break
		}
		audio = append(audio, twilioPayload(t, m)...)
		chunks++
	}
	want := make([]byte, len(speech)/2)
	codec.EncodeUlaw(want, speech)
	if !bytes.Equal(audio, want) || chunks != 5 {
		t.Fatalf("%d bytes in %d chunks before the mark, want the %d of the recording in 5", len(audio), chunks, len(want))
	}
	// Twilio returns the mark once the audio before it has played.
	send(t, conn, `{"event":"mark","sequenceNumber":"4","streamSid":"MZ42","mark":{"name":"hello"}}`)
	c := waitCall(t, sim, func(c botsim.Call) bool { return len(c.MarksAcked) == 1 })
	if c.MarksAcked[0] != "hello" || len(c.MarksSent) != 1 || c.MarksSent[0] != "hello" || c.AudioOut != 800 {
		t.Errorf("marks sent %q acked %q, audio out %d", c.MarksSent, c.MarksAcked, c.AudioOut)
	}
	// A barge-in of the bot's own is Twilio's clear.
	if err := sim.Interrupt(c.ID); err != nil {
		t.Fatal(err)
	}
	if m := event(t, conn); m["event"] != "clear" || m["streamSid"] != "MZ42" {
		t.Fatalf("interrupt sent %v", m)
	}
}

func TestRawL16At16kHz(t *testing.T) {
	f := codec.Format{Encoding: codec.L16, Rate: 16000}
	t.Run("echo", func(t *testing.T) {
		sim, url := botsim.Start(t, botsim.Config{})
		conn := dial(t, url+"/raw", nil)
		send(t, conn, `{"event":"start","call_id":"c1","route":"relay","codec":"l16","rate":16000}`)
		in := frames(3, 20*f.BytesPerMs())
		for _, fr := range in {
			if err := conn.Write(ctx(t), websocket.MessageBinary, fr); err != nil {
				t.Fatal(err)
			}
		}
		send(t, conn, `{"event":"dtmf","digit":"#"}`)
		for i, fr := range in {
			typ, got, err := conn.Read(ctx(t))
			if err != nil || typ != websocket.MessageBinary || !bytes.Equal(got, fr) {
				t.Fatalf("echo %d: %v %v, %d bytes", i, err, typ, len(got))
			}
		}
		c := waitCall(t, sim, func(c botsim.Call) bool { return c.DTMF == "#" })
		if c.Format != f || c.InputFormat != f || c.AudioIn != 3*640 || !strings.Contains(c.StartMessage, `"call_id":"c1"`) {
			t.Errorf("format %v/%v, audio %d, start %q", c.Format, c.InputFormat, c.AudioIn, c.StartMessage)
		}
	})
	t.Run("speak", func(t *testing.T) {
		// 100 ms recorded at 8 kHz, spoken at 16 kHz: twice the samples.
		sim, url := botsim.Start(t, botsim.Config{Mode: botsim.Speak, Speech: botsim.Speech{PCM: signal.Speech(8000, 0.1), Rate: 8000, Name: "greeting"}})
		conn := dial(t, url+"/raw", nil)
		send(t, conn, `{"event":"start","codec":"l16","rate":16000}`)
		total := 0
		for {
			typ, msg, err := conn.Read(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			if typ == websocket.MessageText {
				if string(msg) != `{"event":"mark","name":"greeting"}` {
					t.Fatalf("text %s", msg)
				}
				break
			}
			if len(msg) != 640 {
				t.Fatalf("chunk of %d bytes, want 20 ms at 16 kHz", len(msg))
			}
			total += len(msg)
		}
		if total != 100*f.BytesPerMs() {
			t.Fatalf("%d bytes of speech, want %d", total, 100*f.BytesPerMs())
		}
		send(t, conn, `{"event":"mark","name":"greeting"}`)
		send(t, conn, `{"event":"clear"}`)
		send(t, conn, `{"event":"stop"}`)
		c := waitCall(t, sim, func(c botsim.Call) bool { return !c.Live })
		if !c.Stopped || c.Clears != 1 || len(c.MarksAcked) != 1 || c.Err != "" {
			t.Errorf("stopped %v clears %d acked %q err %q", c.Stopped, c.Clears, c.MarksAcked, c.Err)
		}
	})
	t.Run("bad format", func(t *testing.T) {
		sim, url := botsim.Start(t, botsim.Config{})
		conn := dial(t, url+"/raw", nil)
		send(t, conn, `{"event":"start","codec":"l16","rate":44100}`)
		if _, _, err := conn.Read(ctx(t)); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Fatalf("start at 44.1 kHz: %v, want a policy violation", err)
		}
		if c := waitCall(t, sim, func(c botsim.Call) bool { return !c.Live }); !strings.Contains(c.Err, "44100") {
			t.Errorf("err %q", c.Err)
		}
	})
}

func TestOpenAIRealtime(t *testing.T) {
	sim, url := botsim.Start(t, botsim.Config{Delay: 10 * time.Millisecond})
	conn := dial(t, url+"/openai/v1/realtime?model=gpt-realtime", http.Header{"Authorization": {"Bearer test"}})
	m := event(t, conn)
	if m["type"] != "session.created" || m["session"].(map[string]any)["model"] != "gpt-realtime" {
		t.Fatalf("first event %v", m)
	}
	send(t, conn, `{"type":"session.update","session":{"type":"realtime","instructions":"be brief",`+
		`"audio":{"input":{"format":{"type":"audio/pcmu"},"turn_detection":{"type":"server_vad"}},"output":{"format":{"type":"audio/pcmu"},"voice":"marin"}}}}`)
	m = event(t, conn)
	s := m["session"].(map[string]any)
	out := s["audio"].(map[string]any)["output"].(map[string]any)
	if m["type"] != "session.updated" || s["instructions"] != "be brief" || out["format"].(map[string]any)["type"] != "audio/pcmu" || out["voice"] != "marin" {
		t.Fatalf("update answered with %v", m)
	}
	frame := bytes.Repeat([]byte{0x55}, 160)
	send(t, conn, fmt.Sprintf(`{"type":"input_audio_buffer.append","audio":%q}`, base64.StdEncoding.EncodeToString(frame)))
	var respID, itemID string
	for _, want := range []string{"response.created", "response.output_item.added", "response.output_audio.delta"} {
		m = event(t, conn)
		if m["type"] != want {
			t.Fatalf("got %v, want %s", m["type"], want)
		}
	}
	respID, itemID = m["response_id"].(string), m["item_id"].(string)
	if got, _ := base64.StdEncoding.DecodeString(m["delta"].(string)); !bytes.Equal(got, frame) || respID == "" || itemID == "" {
		t.Fatalf("delta %v", m)
	}
	// Barge-in as pipecat does it: cancel, then truncate at what was heard.
	send(t, conn, `{"type":"response.cancel"}`)
	if m = event(t, conn); m["type"] != "response.output_audio.done" || m["item_id"] != itemID {
		t.Fatalf("after cancel: %v", m)
	}
	if m = event(t, conn); m["type"] != "response.done" || m["response"].(map[string]any)["status"] != "cancelled" {
		t.Fatalf("after cancel: %v", m)
	}
	send(t, conn, fmt.Sprintf(`{"type":"conversation.item.truncate","item_id":%q,"content_index":0,"audio_end_ms":20}`, itemID))
	if m = event(t, conn); m["type"] != "conversation.item.truncated" || m["audio_end_ms"] != 20.0 {
		t.Fatalf("after truncate: %v", m)
	}
	c := waitCall(t, sim, func(c botsim.Call) bool { return len(c.Truncates) == 1 })
	if c.Cancels != 1 || c.Truncates[0] != (botsim.Truncate{ItemID: itemID, AudioEndMs: 20}) || c.Format != codec.Telephony || len(c.Sessions) != 1 {
		t.Errorf("cancels %d truncates %+v format %v sessions %d", c.Cancels, c.Truncates, c.Format, len(c.Sessions))
	}
	if err := sim.Interrupt(c.ID); err != nil {
		t.Fatal(err)
	}
	if m = event(t, conn); m["type"] != "input_audio_buffer.speech_started" || m["audio_start_ms"] != 20.0 {
		t.Fatalf("interrupt sent %v", m)
	}
	// The next answer is a new response.
	send(t, conn, fmt.Sprintf(`{"type":"input_audio_buffer.append","audio":%q}`, base64.StdEncoding.EncodeToString(frame)))
	event(t, conn)
	event(t, conn)
	if m = event(t, conn); m["type"] != "response.output_audio.delta" || m["response_id"] == respID {
		t.Fatalf("second answer %v, want a delta of a response other than %s", m, respID)
	}
	send(t, conn, `not json`)
	if m = event(t, conn); m["type"] != "error" {
		t.Fatalf("a message that is not JSON: %v", m)
	}
}

func TestOpenAIBetaSpeaks(t *testing.T) {
	sim, url := botsim.Start(t, botsim.Config{Mode: botsim.Speak, Chunk: 50 * time.Millisecond,
		Speech: botsim.Speech{PCM: signal.Speech(24000, 0.1), Rate: 24000}})
	conn := dial(t, url+"/openai", http.Header{"OpenAI-Beta": {"realtime=v1"}})
	event(t, conn)
	send(t, conn, `{"type":"session.update","session":{"input_audio_format":"pcm16","output_audio_format":"pcm16"}}`)
	if m := event(t, conn); m["session"].(map[string]any)["output_audio_format"] != "pcm16" {
		t.Fatalf("update answered with %v", m)
	}
	var deltas, bytesOut int
	for done := false; !done; {
		m := event(t, conn)
		switch m["type"] {
		case "response.audio.delta":
			b, _ := base64.StdEncoding.DecodeString(m["delta"].(string))
			deltas, bytesOut = deltas+1, bytesOut+len(b)
		case "response.done":
			done = m["response"].(map[string]any)["status"] == "completed"
		}
	}
	if deltas != 2 || bytesOut != 4800 {
		t.Fatalf("%d deltas of %d bytes, want 100 ms at 24 kHz in two 50 ms chunks", deltas, bytesOut)
	}
	_ = sim
}

func TestRecordsAreCapped(t *testing.T) {
	sim, url := botsim.Start(t, botsim.Config{RecordAudio: 100, RecordItems: 2})
	conn := dial(t, url+"/raw", nil)
	for range 3 {
		if err := conn.Write(ctx(t), websocket.MessageBinary, make([]byte, 80)); err != nil {
			t.Fatal(err)
		}
		send(t, conn, `{"event":"dtmf","digit":"1"}`)
	}
	c := waitCall(t, sim, func(c botsim.Call) bool { return c.Dropped >= 2 })
	if len(c.Audio) != 100 || c.AudioIn != 240 || len(c.DTMF) != 2 || len(c.Events) != 2 {
		t.Errorf("kept %d of %d audio bytes, dtmf %q, %d events", len(c.Audio), c.AudioIn, c.DTMF, len(c.Events))
	}
}
