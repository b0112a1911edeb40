package console_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/signal"
)

// liveInfo is the tap's header line, as the page read it.
type liveInfo struct {
	Reference     bool `json:"reference"`
	CallerRate    int  `json:"caller_rate"`
	ProcessedRate int  `json:"processed_rate"`
}

// referencePixelsJS counts the timeline's pixels drawn in the reference
// lane's colour.
const referencePixelsJS = `(() => {
  const canvas = document.getElementById('timeline');
  const probe = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
  probe.fillStyle = getComputedStyle(document.documentElement).getPropertyValue('--reference').trim();
  probe.fillRect(0, 0, 1, 1);
  const want = [...probe.getImageData(0, 0, 1, 1).data];
  const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < px.length; i += 4) if (want.every((v, k) => Math.abs(px[i + k] - v) <= 2)) n++;
  return n;
})()`

// TestLiveReferenceLane places a console call on an echo route through
// aec and watches it live: the page reads the host's tap of the call
// (GET /calls/{id}/tap) and draws a reference lane, and the lanes it holds
// are, bit for bit over every stretch it received, the host's: the caller
// lane is the μ-law the page sent, decoded; the processed lane, μ-law
// coded, is what the page played; the reference lane is what the host
// sent the caller one frame earlier (an echo's far end, ABI §11), which
// coded is what the page played a frame before. The drop the page shows
// is the one computed here from those lanes.
func TestLiveReferenceLane(t *testing.T) {
	h := startHostWith(t, withAECRoutes(t))
	mic, micPCM := speechFile(t)
	ctx := browser(t, mic)
	login(t, ctx, h.adminURL, adminToken)
	_, sent, received := call(t, ctx, "canceller", "mulaw-8000", len(micPCM)/2/8, func(callState) {
		value(t, ctx, "waiting for the host's lanes", chromedp.Poll[bool](`window.voxhostLive.frames() > 100 || null`,
			chromedp.WithPollingTimeout(60*time.Second)))
		if eval[bool](t, ctx, `document.getElementById('live-reference-key').hidden`) {
			t.Error("the timeline's key does not show the reference lane")
		}
		screenshot(t, ctx, "call-live-reference")
	})
	run(t, ctx, "waiting for the tap's end", chromedp.WaitReady(chromedp.CSS(`body[data-live="ended"]`)))
	if n := eval[int](t, ctx, referencePixelsJS); n == 0 {
		t.Error("the timeline draws nothing in the reference lane's colour")
	}
	compared := checkHostLanes(t, ctx, "window.voxhostLive", sent, received)
	t.Logf("%d reference samples are what the host sent, bit for bit; the page: %s", compared, text(t, ctx, "#live-drop"))
}

// checkHostLanes reads the lanes a page's HostLanes (its test hook) holds
// of an echo call through aec, μ-law 8 kHz, that sent sent and received
// received, and checks them bit for bit over every stretch the page got:
// the caller lane is sent, decoded; the processed lane, μ-law coded, is
// received; the reference lane is the processed lane a frame earlier, so
// coded it is what the caller received a frame before. The drop the page
// shows must be the one levelDrop computes from the lanes. It returns how
// many reference samples it compared.
func checkHostLanes(t *testing.T, ctx context.Context, hook string, sent, received []byte) int {
	t.Helper()
	info := eval[liveInfo](t, ctx, hook+`.info()`)
	if !info.Reference || info.CallerRate != 8000 || info.ProcessedRate != 8000 {
		t.Fatalf("the tap says %+v; want a reference, 8 kHz in and out", info)
	}
	caller := signal.Samples(decodeBase64(t, eval[string](t, ctx, hook+`.caller()`)))
	ref := signal.Samples(decodeBase64(t, eval[string](t, ctx, hook+`.reference()`)))
	proc := signal.Samples(decodeBase64(t, eval[string](t, ctx, hook+`.processed()`)))
	spans := eval[[][2]int](t, ctx, hook+`.spans()`)
	if lost := eval[int](t, ctx, hook+`.lost()`); lost > 0 {
		t.Logf("%d frames did not reach the page in time (a loaded machine); the lanes are compared over the %d stretches it got", lost, len(spans))
	}
	sentPCM, heard := ulawSamples(sent), ulawSamples(received)
	if len(spans) == 0 || spans[len(spans)-1][1] < len(heard)/8 || len(ref) != len(caller) || len(proc) != len(caller) {
		t.Fatalf("the lanes hold %v ms of the call (caller %d, reference %d, processed %d samples); the call got %d ms back",
			spans, len(caller), len(ref), len(proc), len(heard)/8)
	}
	coded := func(s int16) byte {
		var b [1]byte
		codec.EncodeUlaw(b[:], []byte{byte(s), byte(s >> 8)})
		return b[0]
	}
	compared := 0
	for _, sp := range spans {
		for i := sp[0] * 8; i < sp[1]*8; i++ {
			if caller[i] != sentPCM[i] {
				t.Fatalf("sample %d (%d ms) of the caller lane is %d; the call sent %d", i, i/8, caller[i], sentPCM[i])
			}
			if i < len(received) && coded(proc[i]) != received[i] {
				t.Fatalf("sample %d (%d ms) of the processed lane, μ-law coded, is not what the call got back", i, i/8)
			}
			if i-160 < sp[0]*8 {
				continue // the frame before is not on the page
			}
			if i-160 >= len(received) {
				break
			}
			if ref[i] != proc[i-160] || coded(ref[i]) != received[i-160] {
				t.Fatalf("sample %d (%d ms) of the reference lane is %d: not what the host sent the caller a frame before (%d, played as %d)", i, i/8, ref[i], proc[i-160], heard[i-160])
			}
			compared++
		}
	}
	if compared < 2*8000 {
		t.Fatalf("only %d samples compared over %v ms; want the call's seconds", compared, spans)
	}

	type summary struct {
		Frames   int        `json:"frames"`
		Active   int        `json:"active"`
		DropDB   *float64   `json:"dropDB"`
		BySecond []*float64 `json:"bySecond"`
	}
	shown := eval[summary](t, ctx, hook+`.summary()`)
	active, drop, bySecond := levelDrop(caller, ref, proc)
	if shown.Frames != len(caller)/160 || shown.Active != active || shown.DropDB == nil || math.Abs(*shown.DropDB-drop) > 0.01 || len(shown.BySecond) != len(bySecond) {
		t.Fatalf("the page shows %d frames, %d active, %v dB; computed here %d frames, %d active, %.2f dB", shown.Frames, shown.Active, shown.DropDB, len(caller)/160, active, drop)
	}
	for i, d := range shown.BySecond {
		if d != nil && math.Abs(*d-bySecond[i]) > 0.01 {
			t.Fatalf("second %d: the page shows %.2f dB, computed here %.2f", i, *d, bySecond[i])
		}
	}
	return compared
}

// TestWatchALiveCall: a call the console did not place (a client on the
// main listener, talking in real time through the echo route with aec) is
// watched from the Live calls tab: the page draws the host's lanes of it,
// and they are, bit for bit over every stretch it received, what the
// client sent (decoded), what came back to it (the processed lane, μ-law
// coded) and what the host sent it a frame before (the reference).
func TestWatchALiveCall(t *testing.T) {
	h := startHostWith(t, withAECRoutes(t))
	ctx := browser(t, speechWAV(t))
	login(t, ctx, h.adminURL, adminToken)

	const id = "carrier-watched"
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(cctx, strings.Replace(h.callURL, "http", "ws", 1)+"/ws?pipeline=canceller&call_id="+id,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + callToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var mu sync.Mutex
	var received []byte
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			_, msg, err := c.Read(cctx)
			if err != nil {
				return
			}
			mu.Lock()
			received = append(received, msg...)
			mu.Unlock()
		}
	}()
	// The caller talks in real time until the page has watched 3 s of it.
	speech := signal.Concat(signal.Silence(8000, 500), signal.Speech(8000, 2.6), signal.Silence(8000, 500))
	var sent []byte
	stop := make(chan struct{})
	talked := make(chan error, 1)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		frame := make([]byte, 160)
		for k := 0; ; k++ {
			select {
			case <-stop:
				talked <- nil
				return
			case <-tick.C:
			}
			off := (k * 320) % len(speech)
			codec.EncodeUlaw(frame, speech[off:off+320])
			if err := c.Write(cctx, websocket.MessageBinary, frame); err != nil {
				talked <- err
				return
			}
			sent = append(sent, frame...)
		}
	}()
	row := fmt.Sprintf(`#calls tr[data-id=%q] button`, id)
	run(t, ctx, "watching the call",
		chromedp.Click(chromedp.ID("tab-calls")),
		chromedp.WaitReady(chromedp.CSS(row)),
		chromedp.Click(chromedp.CSS(row)),
	)
	value(t, ctx, "waiting for 3 s of the host's lanes", chromedp.Poll[bool](`window.voxhostWatch.frames() > 150 || null`,
		chromedp.WithPollingTimeout(60*time.Second)))
	screenshot(t, ctx, "calls-watch")
	close(stop)
	if err := <-talked; err != nil {
		t.Fatal(err)
	}
	// Every frame sent is answered before the call ends.
	hosttest.WaitFor(t, "every frame sent to come back", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(received) >= len(sent)
	})
	c.Close(websocket.StatusNormalClosure, "")
	<-readDone
	run(t, ctx, "waiting for the tap's end", chromedp.WaitReady(chromedp.CSS(`body[data-watch="ended"]`)))
	if got := eval[string](t, ctx, `window.voxhostWatch.callID()`); got != id {
		t.Fatalf("the page watched %q", got)
	}
	if eval[bool](t, ctx, `document.getElementById('watch-reference-key').hidden`) {
		t.Error("the watched call's key does not show the reference lane")
	}
	compared := checkHostLanes(t, ctx, "window.voxhostWatch", sent, received)
	t.Logf("%d reference samples of the watched call are what the host sent it, bit for bit; the page: %s", compared, text(t, ctx, "#watch-drop"))
}
