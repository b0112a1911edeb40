package server_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/audiofile"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/plugin"
)

// TestRelayEchoIsCancelled relays a call to a bot that talks for 20 s, over
// real WebSockets, with a caller whose microphone returns only the bot's
// echo: what it played (a phone's jitter buffer: the audio it receives,
// played in order from when it arrives) over a hybrid-like path, 120 ms and
// -12 dB. The stock aec in the inbound pipeline gets the far-end reference
// from the host's playout (ABI §11): the bot must hear the echo at least
// 20 dB down from 5 s on. That the reference lines up with the echo the
// caller returns, across the host's playout goroutine, its pacing and the
// network, is what this checks: misaligned by a frame, MDF does not
// converge.
func TestRelayEchoIsCancelled(t *testing.T) {
	const (
		seconds  = 20
		frameLen = 160
	)
	botPCM, rate, err := audiofile.ReadPCM("../../plugins/aec/testdata/bot_8k.wav")
	if err != nil || rate != 8000 {
		t.Fatalf("fixture: %v at %d Hz", err, rate)
	}
	botUlaw := make([]byte, len(botPCM)/2)
	codec.EncodeUlaw(botUlaw, botPCM)
	botUlaw = botUlaw[:min(len(botUlaw), seconds*8000)]

	var heardMu sync.Mutex
	var heard []byte // what the bot received: the inbound pipeline's output
	bot := startBot(t, func(conn *gorilla.Conn) {
		if _, _, err := conn.ReadMessage(); err != nil { // start
			return
		}
		go func() {
			// A second at a time, as a TTS streams; the host paces it.
			for off := 0; off < len(botUlaw); off += 8000 {
				if conn.WriteMessage(gorilla.BinaryMessage, botUlaw[off:min(off+8000, len(botUlaw))]) != nil {
					return
				}
			}
		}()
		for {
			typ, msg, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if typ == gorilla.BinaryMessage {
				heardMu.Lock()
				heard = append(heard, msg...)
				heardMu.Unlock()
			}
		}
	})
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{
		"main": {inbound: "aec", upstream: upstream(t, bot.url, "raw")},
	}, nil)
	c := dial(t, h.url+"/ws")
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	received := make(chan []byte, 1024)
	go func() {
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				close(received)
				return
			}
			if typ == websocket.MessageBinary {
				received <- msg
			}
		}
	}()

	// played is the caller's playout on its own clock (sample k is played
	// while the caller sends its sample k); end is where it has audio to.
	frames := seconds * 8000 / frameLen
	played := make([]float64, (frames+50)*frameLen)
	end := 0
	echo := make([]float64, frames*frameLen)
	const delay = 960 // 120 ms
	gain := math.Pow(10, -12.0/20)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	pcm := make([]byte, 2*frameLen)
	for k := 0; k < frames; k++ {
		<-tick.C
		for drained := false; !drained; {
			select {
			case msg, ok := <-received:
				if !ok {
					t.Fatalf("the call ended after %d frames", k)
				}
				end = max(end, k*frameLen)
				dec := make([]byte, 2*len(msg))
				codec.DecodeUlaw(dec, msg)
				for i := 0; i+1 < len(dec) && end < len(played); i += 2 {
					played[end] = float64(int16(uint16(dec[i]) | uint16(dec[i+1])<<8))
					end++
				}
			default:
				drained = true
			}
		}
		for i := 0; i < frameLen; i++ {
			n := k*frameLen + i
			v := 0.0
			if n >= delay+90 {
				// the first reflection and a short dispersed tail
				v = gain * (0.9*played[n-delay] + 0.3*played[n-delay-40] - 0.2*played[n-delay-90])
			}
			echo[n] = v
			s := int16(math.Max(-32768, math.Min(32767, math.Round(v))))
			pcm[2*i], pcm[2*i+1] = byte(s), byte(uint16(s)>>8)
		}
		ulaw := make([]byte, frameLen)
		codec.EncodeUlaw(ulaw, pcm)
		if err := c.Write(ctx, websocket.MessageBinary, ulaw); err != nil {
			t.Fatal(err)
		}
	}
	// The bot hears the last frames a little later.
	waitFor(t, func() bool {
		heardMu.Lock()
		defer heardMu.Unlock()
		return len(heard) >= (frames-5)*frameLen
	})
	heardMu.Lock()
	got := make([]byte, 2*len(heard))
	codec.DecodeUlaw(got, heard)
	heardMu.Unlock()
	energy := func(from, to int, at func(int) float64) float64 {
		e := 0.0
		for i := from; i < to; i++ {
			e += at(i) * at(i)
		}
		return e
	}
	from, to := 5*8000, (frames-10)*frameLen
	echoEnergy := energy(from, to, func(i int) float64 { return echo[i] })
	outEnergy := energy(from, to, func(i int) float64 { return float64(int16(uint16(got[2*i]) | uint16(got[2*i+1])<<8)) })
	erle := 10 * math.Log10(echoEnergy/math.Max(outEnergy, 1))
	t.Logf("the bot hears the caller's echo %.1f dB down from 5 s to %d s (echo %.1f dBFS)",
		erle, to/8000, 10*math.Log10(echoEnergy/float64(to-from)/(32767*32767)))
	if erle < 20 {
		t.Fatalf("the bot hears the echo only %.1f dB down, want >= 20 dB: the reference does not line up with what the caller played", erle)
	}
	c.Close(websocket.StatusNormalClosure, "done")
}
