package console_test

import (
	"math"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/voxhost/voxhost/host/codec"
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
	info := eval[liveInfo](t, ctx, `window.voxhostLive.info()`)
	if !info.Reference || info.CallerRate != 8000 || info.ProcessedRate != 8000 {
		t.Fatalf("the tap says %+v; want a reference, 8 kHz in and out", info)
	}
	if n := eval[int](t, ctx, referencePixelsJS); n == 0 {
		t.Error("the timeline draws nothing in the reference lane's colour")
	}
	caller := signal.Samples(decodeBase64(t, eval[string](t, ctx, `window.voxhostLive.caller()`)))
	ref := signal.Samples(decodeBase64(t, eval[string](t, ctx, `window.voxhostLive.reference()`)))
	proc := signal.Samples(decodeBase64(t, eval[string](t, ctx, `window.voxhostLive.processed()`)))
	spans := eval[[][2]int](t, ctx, `window.voxhostLive.spans()`)
	if lost := eval[int](t, ctx, `window.voxhostLive.lost()`); lost > 0 {
		t.Logf("%d frames did not reach the page in time (a loaded machine); the lanes are compared over the %d stretches it got", lost, len(spans))
	}
	sentPCM, heard := ulawSamples(sent), ulawSamples(received)
	if len(spans) == 0 || spans[len(spans)-1][1] < len(heard)/8 {
		t.Fatalf("the lanes hold %v ms of the call; the page played %d ms", spans, len(heard)/8)
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
				t.Fatalf("sample %d (%d ms) of the caller lane is %d; the page sent %d", i, i/8, caller[i], sentPCM[i])
			}
			if i < len(received) && coded(proc[i]) != received[i] {
				t.Fatalf("sample %d (%d ms) of the processed lane, μ-law coded, is not what the page played", i, i/8)
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
	t.Logf("the lanes hold %v ms of the call; %d reference samples are what the host sent, bit for bit", spans, compared)
	if compared < 3*8000 {
		t.Fatalf("only %d samples compared; want the call's seconds", compared)
	}

	type summary struct {
		Frames   int        `json:"frames"`
		Active   int        `json:"active"`
		DropDB   *float64   `json:"dropDB"`
		BySecond []*float64 `json:"bySecond"`
	}
	shown := eval[summary](t, ctx, `window.voxhostLive.summary()`)
	active, drop, bySecond := levelDrop(caller, ref[:len(caller)], proc[:len(caller)])
	if shown.Frames != len(caller)/160 || shown.Active != active || shown.DropDB == nil || math.Abs(*shown.DropDB-drop) > 0.01 || len(shown.BySecond) != len(bySecond) {
		t.Fatalf("the page shows %d frames, %d active, %v dB; computed here %d frames, %d active, %.2f dB", shown.Frames, shown.Active, shown.DropDB, len(caller)/160, active, drop)
	}
	for i, d := range shown.BySecond {
		if d != nil && math.Abs(*d-bySecond[i]) > 0.01 {
			t.Fatalf("second %d: the page shows %.2f dB, computed here %.2f", i, *d, bySecond[i])
		}
	}
	t.Logf("the page: %s", text(t, ctx, "#live-drop"))
}
