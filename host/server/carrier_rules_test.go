package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
)

// What the server does with the rules some carriers declare: the auto
// endpoint's detected protocol, Exotel's minimum chunk, Plivo's clear
// that discards checkpoints, Genesys's hold and its 200 ms frames.

// TestAutoCallsAreTheirCarriers places a Twilio call on /auto: once
// detected, the call is a Twilio call, paced as Twilio is (it buffers) and
// counted under its own protocol.
func TestAutoCallsAreTheirCarriers(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, nil)
	c := dial(t, h.url+"/auto")
	defer c.CloseNow()
	twilioCallerStart(t, c, `{}`)
	ctx := context.Background()
	frame := base64.StdEncoding.EncodeToString(ulawSpeech(0.02))
	if err := c.Write(ctx, websocket.MessageText, twilioMsg("media", 2, `"media":{"payload":"`+frame+`"}`)); err != nil {
		t.Fatal(err)
	}
	if _, msg := readMessage(t, c); !strings.Contains(string(msg), `"event":"media"`) {
		t.Fatalf("got %s, want Twilio media", msg)
	}
	c.Write(ctx, websocket.MessageText, twilioMsg("stop", 3, `"stop":{"accountSid":"AC1","callSid":"CA1"}`))
	c.Read(ctx)
	assertMetric(t, h, `voxhost_calls_total{outcome="completed",protocol="twilio"} 1`)
	assertMetric(t, h, `voxhost_frames_in_total{protocol="twilio"} 1`)
}

// TestExotelHearsTheBotInChunks relays an Exotel call to a raw bot that
// answers with a second and a half of speech: Exotel takes messages of
// 3,200 bytes or more in multiples of 320 ("smaller chunks risk audio
// distortion"), so every media message must be one, the tail padded with
// silence once the bot's mark says its answer ended, and the audio must be
// the bot's, in order.
func TestExotelHearsTheBotInChunks(t *testing.T) {
	f := codec.Format{Encoding: codec.L16, Rate: 8000}
	answer := append(carrierSpeech(f), carrierSpeech(f)[:8000]...) // 1.5 s
	bot := startBot(t, func(conn *gorilla.Conn) {
		conn.ReadMessage()
		conn.WriteMessage(gorilla.BinaryMessage, answer)
		conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"mark","name":"done"}`))
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	})
	up := upstream(t, bot.url, "raw")
	up.Format = f
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough"},
		"bot":  {inbound: "passthrough", upstream: up},
	}, nil)
	c := dial(t, h.url+"/exotel")
	defer c.CloseNow()
	ctx := context.Background()
	for _, m := range []string{`{"event":"connected"}`, exotelStart(8000)} {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	var heard []byte
	for {
		_, msg := readMessage(t, c)
		m := decodeCarrier(t, msg)
		if m.Event == "mark" {
			break
		}
		if m.Event != "media" {
			continue
		}
		if n := len(m.Media.Payload); n < 3200 || n%320 != 0 {
			t.Fatalf("a media message of %d bytes: Exotel takes 3,200 or more, a multiple of 320", n)
		}
		heard = append(heard, m.Media.Payload...)
	}
	if len(heard) < len(answer) || !bytes.Equal(heard[:len(answer)], answer) {
		t.Fatalf("heard %d bytes before the mark, want the bot's %d first", len(heard), len(answer))
	}
	for _, b := range heard[len(answer):] {
		if b != 0 {
			t.Fatal("the tail is padded with something other than silence")
		}
	}
}

// TestPlivoClearTakesItsCheckpoints relays a Plivo call to a raw bot that
// queues audio and a mark, then asks for a clear: Plivo's clearAudio
// discards the checkpoints it holds (no playedStream follows), so the host
// must acknowledge the bot's mark as cleared itself.
func TestPlivoClearTakesItsCheckpoints(t *testing.T) {
	acked := make(chan string, 1)
	bot := startBot(t, func(conn *gorilla.Conn) {
		conn.ReadMessage()
		conn.WriteMessage(gorilla.BinaryMessage, make([]byte, 800))
		conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"mark","name":"m1"}`))
		time.Sleep(200 * time.Millisecond) // the checkpoint reaches Plivo
		conn.WriteMessage(gorilla.TextMessage, []byte(`{"event":"clear"}`))
		for {
			_, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if strings.Contains(string(msg), `"event":"mark"`) {
				acked <- string(msg)
			}
		}
	})
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "passthrough"},
		"bot":  {inbound: "passthrough", upstream: upstream(t, bot.url, "raw")},
	}, nil)
	c := dial(t, h.url+"/plivo")
	defer c.CloseNow()
	ctx := context.Background()
	if err := c.Write(ctx, websocket.MessageText, []byte(plivoStart("audio/x-mulaw", 8000))); err != nil {
		t.Fatal(err)
	}
	sawCheckpoint := false
	for {
		m := decodeCarrier(t, func() []byte { _, msg := readMessage(t, c); return msg }())
		if m.Event == "checkpoint" {
			sawCheckpoint = true
		}
		if m.Event == "clearAudio" {
			break
		}
	}
	if !sawCheckpoint {
		t.Fatal("the bot's mark never reached Plivo as a checkpoint")
	}
	select {
	case got := <-acked:
		if !strings.Contains(got, `"name":"m1"`) {
			t.Fatalf("the bot got %s, want its mark m1 back", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the bot's mark was never acknowledged after Plivo's clear")
	}
	assertMetric(t, h, `voxhost_marks_total{result="cleared"} 1`)
}

// TestGenesysOnHoldIsNotIdle pauses a Genesys call (the customer on hold)
// for longer than the idle timeout: the call must live on and take audio
// after the resume, with Genesys's 200 ms frames under the server's
// default frame limit.
func TestGenesysOnHoldIsNotIdle(t *testing.T) {
	h := newHost(t, map[string]string{"main": "passthrough"}, func(o *server.Options) { o.IdleTimeout = 300 * time.Millisecond })
	c := dial(t, h.url+"/genesys")
	defer c.CloseNow()
	ctx := context.Background()
	send := func(m string) {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	send(genesysCallerOpen(`{}`))
	readGenesys(t, c, 1, 1) // opened
	frame := ulawSpeech(0.2)
	if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
		t.Fatal(err)
	}
	if _, msg := readMessage(t, c); len(msg) != len(frame) {
		t.Fatalf("a 200 ms frame came back as %d bytes", len(msg))
	}
	send(genesysCallerMsg("paused", 2, 1, "PT0.2S", `{}`))
	time.Sleep(time.Second)
	send(genesysCallerMsg("resumed", 3, 1, "PT0.2S", `{}`))
	if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
		t.Fatal(err)
	}
	for {
		typ, msg := readMessage(t, c)
		if typ == websocket.MessageBinary {
			if len(msg) != len(frame) {
				t.Fatalf("after the hold, a %d-byte frame", len(msg))
			}
			break
		}
		if m := fmt.Sprint(string(msg)); strings.Contains(m, `"disconnect"`) {
			t.Fatalf("the call was ended during the hold: %s", m)
		}
	}
}
