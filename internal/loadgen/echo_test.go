package loadgen

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// echoServer answers every audio frame with the same audio, like a
// passthrough pipeline, on /ws (raw) and /twilio, after a delay, and can
// stall: replies due in a window of wall time wait until it ends, while
// frames keep being read. It also sends a non-audio message now and then
// (an event on raw, a mark on Twilio), which the generator must ignore.
// With chunk set, it answers in messages of chunk bytes of audio instead
// of one per frame, as a relay's playout re-frames a bot's audio. It has
// no /metrics.
type echoServer struct {
	url                string
	delay              time.Duration
	stallFrom, stallTo time.Time
	chunk              int // set before the first call

	framesIn atomic.Int64
	inStall  atomic.Int64 // frames that arrived during the stall
}

func newEchoServer(t *testing.T, delay time.Duration, stallAfter, stallFor time.Duration) *echoServer {
	t.Helper()
	e := &echoServer{delay: delay}
	if stallFor > 0 {
		e.stallFrom = time.Now().Add(stallAfter)
		e.stallTo = e.stallFrom.Add(stallFor)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) { e.serve(w, r, false) })
	mux.HandleFunc("/twilio", func(w http.ResponseWriter, r *http.Request) { e.serve(w, r, true) })
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	e.url = "ws" + strings.TrimPrefix(hs.URL, "http")
	return e
}

func (e *echoServer) stalled(at time.Time) bool {
	return !e.stallFrom.IsZero() && !at.Before(e.stallFrom) && at.Before(e.stallTo)
}

type pending struct {
	at    time.Time
	reply []byte
}

func (e *echoServer) serve(w http.ResponseWriter, r *http.Request, twilio bool) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := context.Background()
	queue := make(chan pending, 100000)
	go func() {
		typ := websocket.MessageBinary
		if twilio {
			typ = websocket.MessageText
		}
		n := 0
		for p := range queue {
			due := p.at.Add(e.delay)
			if e.stalled(due) {
				due = e.stallTo
			}
			time.Sleep(time.Until(due))
			if conn.Write(ctx, typ, p.reply) != nil {
				return
			}
			if n++; n%10 == 0 {
				extra := []byte(`{"event":"plugin","plugin":"vad","name":"speech_start","data":null,"t_ms":20}`)
				if twilio {
					extra = []byte(`{"event":"mark","streamSid":"MZ1","mark":{"name":"m"}}`)
				}
				if conn.Write(ctx, websocket.MessageText, extra) != nil {
					return
				}
			}
		}
	}()
	defer close(queue)
	var held []byte // audio not yet answered, with chunk set
	for {
		typ, msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		now := time.Now()
		audio := msg
		if twilio {
			if !strings.Contains(string(msg), `"event":"media"`) {
				continue
			}
			i := strings.Index(string(msg), `"payload":"`) + len(`"payload":"`)
			if audio, err = base64.StdEncoding.DecodeString(string(msg[i : i+strings.IndexByte(string(msg[i:]), '"')])); err != nil {
				return
			}
		} else if typ != websocket.MessageBinary {
			continue
		}
		e.framesIn.Add(1)
		if e.stalled(now) {
			e.inStall.Add(1)
		}
		held = append(held, audio...)
		n := len(held)
		if e.chunk > 0 {
			n = len(held) / e.chunk * e.chunk
		}
		for off := 0; off < n; {
			size := n - off
			if e.chunk > 0 {
				size = e.chunk
			}
			reply := held[off : off+size : off+size]
			if twilio {
				reply = fmt.Appendf(nil, `{"event": "media", "streamSid": "MZ1", "media": {"payload": %q}}`, base64.StdEncoding.EncodeToString(reply))
			}
			queue <- pending{at: now, reply: reply}
			off += size
		}
		held = append([]byte(nil), held[n:]...)
	}
}
