package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// The caller side speaks as Genesys Cloud's Audio Connector does (AudioHook
// version 2, as the reference implementations type it: see
// host/transport/genesys_test.go): open with its media offers, then 200 ms
// binary frames of PCMU (1600 bytes), ping, dtmf and close, every message
// numbered by seq and carrying the last seq it had as serverseq.
const genesysCallerID = "e160e428-53e2-487c-977d-96989bf5c99d"

// genesysCallerMsg is a client message.
func genesysCallerMsg(typ string, seq, serverseq int, position, params string) string {
	return fmt.Sprintf(`{"version":"2","id":%q,"type":%q,"seq":%d,"serverseq":%d,"position":%q,"parameters":%s}`,
		genesysCallerID, typ, seq, serverseq, position, params)
}

// genesysCallerOpen is open with the offers of a call streamed both ways
// and input variables vars.
func genesysCallerOpen(vars string) string {
	return genesysCallerMsg("open", 1, 0, "PT0S", `{"organizationId":"d7934305-0972-4844-938e-9060eef73d05",`+
		`"conversationId":"090eaa2f-72fa-480a-83e0-8667ff89c0ec",`+
		`"participant":{"id":"883efee8-3d6c-4537-b500-6d7ca4b92fa0","ani":"+1-555-555-1234","aniName":"John Doe","dnis":"+1-800-555-6789"},`+
		`"media":[{"type":"audio","format":"PCMU","channels":["external","internal"],"rate":8000},{"type":"audio","format":"PCMU","channels":["external"],"rate":8000}],`+
		`"language":"en-US","inputVariables":`+vars+`}`)
}

// genesysServerMsg is what the host answers: its envelope read back.
type genesysServerMsg struct {
	Version    string          `json:"version"`
	Type       string          `json:"type"`
	Seq        int             `json:"seq"`
	ClientSeq  int             `json:"clientseq"`
	ID         string          `json:"id"`
	Parameters json.RawMessage `json:"parameters"`
}

// readGenesys reads a text message from the host and checks its envelope:
// version 2, the session's id and the seq and clientseq wanted.
func readGenesys(t *testing.T, c *websocket.Conn, seq, clientseq int) genesysServerMsg {
	t.Helper()
	typ, msg := readMessage(t, c)
	var m genesysServerMsg
	if typ != websocket.MessageText || json.Unmarshal(msg, &m) != nil {
		t.Fatalf("host sent %v %q, want an AudioHook message", typ, msg)
	}
	if m.Version != "2" || m.ID != genesysCallerID || m.Seq != seq || m.ClientSeq != clientseq {
		t.Fatalf("host sent %s, want seq %d and clientseq %d", msg, seq, clientseq)
	}
	return m
}

// TestGenesysEchoCall places a Genesys call on an echo route its input
// variables pick: opened chooses the mono offer, the 200 ms frames come
// back as voxhost run makes them, a ping is answered with the ping's seq,
// a key reaches the plugin, whose clear comes back as a barge_in event,
// and close is answered closed before the host closes; every message the
// host sends takes the next seq.
func TestGenesysEchoCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough", "bot": "gain db=-6 | " + testdataPlugin("clear_on_dtmf")}, nil)
	ulaw := ulawSpeech(2)
	want := hosttest.OfflineUlaw(t, "gain db=-6", ulaw)
	c := dial(t, h.url+"/genesys")
	defer c.CloseNow()
	ctx := context.Background()
	writeText(t, c, genesysCallerOpen(`{"pipeline":"bot"}`))
	opened := readGenesys(t, c, 1, 1)
	if opened.Type != "opened" || string(opened.Parameters) != `{"startPaused":false,"media":[{"type":"audio","format":"PCMU","channels":["external"],"rate":8000}]}` {
		t.Fatalf("open answered %s %s", opened.Type, opened.Parameters)
	}
	var got []byte
	seq, serverSeq := 1, 1
	for off := 0; off < len(ulaw); off += 1600 {
		if err := c.Write(ctx, websocket.MessageBinary, ulaw[off:off+1600]); err != nil {
			t.Fatal(err)
		}
		typ, msg := readMessage(t, c)
		if typ != websocket.MessageBinary || len(msg) != 1600 {
			t.Fatalf("frame %d answered with %v of %d bytes", off/1600, typ, len(msg))
		}
		got = append(got, msg...)
		position := fmt.Sprintf("PT%.1fS", float64(off+1600)/8000)
		switch off / 1600 {
		case 2:
			seq++
			writeText(t, c, genesysCallerMsg("ping", seq, serverSeq, position, `{}`))
			serverSeq++
			if m := readGenesys(t, c, serverSeq, seq); m.Type != "pong" {
				t.Fatalf("ping answered with %s", m.Type)
			}
		case 5:
			seq++
			writeText(t, c, genesysCallerMsg("dtmf", seq, serverSeq, position, `{"digit":"5"}`))
			serverSeq++
			if m := readGenesys(t, c, serverSeq, seq); m.Type != "event" || string(m.Parameters) != `{"entities":[{"type":"barge_in","data":{}}]}` {
				t.Fatalf("after the key: %s %s, want the plugin's clear as barge_in", m.Type, m.Parameters)
			}
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the Genesys call's audio differs from voxhost run's for the same input")
	}
	seq++
	writeText(t, c, genesysCallerMsg("close", seq, serverSeq, "PT2S", `{"reason":"end"}`))
	if m := readGenesys(t, c, serverSeq+1, seq); m.Type != "closed" {
		t.Fatalf("close answered with %s", m.Type)
	}
	if code, _ := closeOf(t, c); code != websocket.StatusNormalClosure {
		t.Fatalf("after closed: close %v, want a normal close", code)
	}
	assertMetric(t, h, `voxhost_calls_total{outcome="completed",protocol="genesys"} 1`)
}

// TestGenesysMalformedEndsOnlyThatCall: audio before open, a version the
// host does not speak, offers it can take none of, and a message out of
// sequence each end their call with a close code and reason; once the
// session has an id, Genesys hears why in a disconnect first. A bystander
// call goes on.
func TestGenesysMalformedEndsOnlyThatCall(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	bystander := dial(t, h.url+"/genesys")
	defer bystander.CloseNow()
	writeText(t, bystander, genesysCallerOpen(`{}`))
	readGenesys(t, bystander, 1, 1)
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		send       []string
		binary     bool
		disconnect string // the disconnect's parameters; "" for none
		code       websocket.StatusCode
		reason     string
	}{
		{"audio before open", []string{string(make([]byte, 1600))}, true, "", websocket.StatusInvalidFramePayloadData, "audio before the session is open"},
		{"version 1", []string{strings.Replace(genesysCallerOpen(`{}`), `"version":"2"`, `"version":"1"`, 1)}, false, "",
			websocket.StatusUnsupportedData, `version "1"`},
		{"opus only", []string{strings.ReplaceAll(genesysCallerOpen(`{}`), `"PCMU"`, `"opus"`)}, false,
			`{"reason":"error","info":"open offers no media voxhost takes: it takes PCMU or L16 audio at 8000 Hz with the external channel"}`,
			websocket.StatusUnsupportedData, "no media voxhost takes"},
		{"seq out of order", []string{genesysCallerOpen(`{}`), genesysCallerMsg("ping", 3, 1, "PT1S", `{}`)}, false,
			`{"reason":"error","info":"\"ping\" message with seq 3 after 1: the client numbers its messages 1, 2, 3, ..."}`,
			websocket.StatusInvalidFramePayloadData, "seq 3 after 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, h.url+"/genesys")
			defer c.CloseNow()
			typ := websocket.MessageText
			if tc.binary {
				typ = websocket.MessageBinary
			}
			for _, m := range tc.send {
				if err := c.Write(ctx, typ, []byte(m)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.disconnect != "" {
				opened := 0
				if len(tc.send) > 1 {
					opened = 1
					readGenesys(t, c, 1, 1)
				}
				if m := readGenesys(t, c, opened+1, 1); m.Type != "disconnect" || string(m.Parameters) != tc.disconnect {
					t.Fatalf("before the close: %s %s, want disconnect %s", m.Type, m.Parameters, tc.disconnect)
				}
			}
			if code, reason := closeOf(t, c); code != tc.code || !strings.Contains(reason, tc.reason) {
				t.Fatalf("close %v %q, want %v with %q", code, reason, tc.code, tc.reason)
			}
		})
	}
	frame := ulawSpeech(0.2)
	if err := bystander.Write(ctx, websocket.MessageBinary, frame); err != nil {
		t.Fatal(err)
	}
	if typ, msg := readMessage(t, bystander); typ != websocket.MessageBinary || !bytes.Equal(msg, hosttest.OfflineUlaw(t, "passthrough", frame)) {
		t.Fatal("the bystander call was disturbed")
	}
}

// TestRelayThroughAGenesysBot relays a Twilio caller to a bot that speaks
// AudioHook's server side (with voxhost's own server role, as an Audio
// Connector bot does): the bot must be opened as Genesys opens it, with
// the caller's parameters as input variables, get the caller's audio and
// keys, and its answer must reach the caller, its barge_in clearing the
// caller's queue; the caller's stop reaches it as close.
func TestRelayThroughAGenesysBot(t *testing.T) {
	callerAudio := ulawSpeech(0.4)
	answer := ulawSpeech(0.2)
	type botLog struct {
		start  *transport.Start
		audio  []byte
		digits string
		closed bool
	}
	got := make(chan botLog, 1)
	var log botLog
	bot := startBot(t, serveAsApp(t, transport.Genesys(), func() { got <- log }, func(conn *gorilla.Conn, app transport.Session, in *transport.Inbound, _ []byte) {
		switch in.Kind {
		case transport.KindStart:
			log.start = in.Start
		case transport.KindAudio:
			log.audio = append(log.audio, in.Audio...)
		case transport.KindDTMF:
			log.digits += string(in.Digit)
			// The answer, then a barge-in of the bot's own.
			conn.WriteMessage(gorilla.BinaryMessage, answer)
			if _, msg, ok := app.Clear(); ok {
				conn.WriteMessage(gorilla.TextMessage, msg)
			}
		case transport.KindStop:
			log.closed = true
		}
	}))
	up := upstream(t, bot.url, "genesys")
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough"},
		"bot":  {inbound: "passthrough", upstream: up},
	}, nil)

	c := dial(t, h.url+"/twilio")
	defer c.CloseNow()
	ctx := context.Background()
	twilioCallerStart(t, c, `{"pipeline":"bot","from":"+15551234","lang":"de"}`)
	seq := 2
	for off := 0; off < len(callerAudio); off, seq = off+160, seq+1 {
		if err := c.Write(ctx, websocket.MessageText, twilioMedia("MZ00000000000000000000000000000001", callerAudio[off:off+160])); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Write(ctx, websocket.MessageText, twilioMsg("dtmf", seq, `"dtmf":{"track":"inbound_track","digit":"7"}`)); err != nil {
		t.Fatal(err)
	}
	// The caller hears the answer, or part of it, then the clear.
	for {
		_, msg := readMessage(t, c)
		e := decodeTwilio(t, msg)
		if e.Event == "clear" {
			break
		}
		if e.Event != "media" {
			t.Fatalf("caller got %s, want the bot's audio or its clear", msg)
		}
	}
	if err := c.Write(ctx, websocket.MessageText, twilioMsg("stop", seq+1, `"stop":{"accountSid":"AC1","callSid":"CA1"}`)); err != nil {
		t.Fatal(err)
	}
	closeOf(t, c)
	log = <-got
	if log.start == nil || log.start.Params["from"] != "+15551234" || log.start.Params["lang"] != "de" || log.start.CallID == "" {
		t.Fatalf("the bot's open: %+v", log.start)
	}
	if !bytes.Equal(log.audio, hosttest.OfflineUlaw(t, "passthrough", callerAudio)) || log.digits != "7" || !log.closed {
		t.Fatalf("bot: %d bytes of the caller's %d, keys %q, closed %v", len(log.audio), len(callerAudio), log.digits, log.closed)
	}
}
