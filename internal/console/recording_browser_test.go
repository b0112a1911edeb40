package console_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/voxhost/voxhost/internal/signal"
)

// recordedCall logs in to h's console, places a call on route from a
// microphone playing speech, hangs up, waits for the page to show the
// call's recording and saves a screenshot as shot; it returns the tab and
// what the page sent and played.
func recordedCall(t *testing.T, h *host, route, shot string) (ctx context.Context, sent, received []byte) {
	t.Helper()
	mic, micPCM := speechFile(t)
	ctx = browser(t, mic)
	login(t, ctx, h.adminURL, adminToken)
	_, sent, received = call(t, ctx, route, "mulaw-8000", len(micPCM)/2/8, nil)
	run(t, ctx, "waiting for the recording", chromedp.WaitReady(chromedp.CSS(`body[data-recording="ready"], body[data-recording="none"]`)))
	if state := eval[string](t, ctx, `document.body.dataset.recording`); state != "ready" {
		t.Fatalf("the page shows no recording (%s): %s", state, text(t, ctx, "#recording-note"))
	}
	screenshot(t, ctx, shot)
	return ctx, sent, received
}

// TestRecordingPlayer places a call from the console on a route that
// records every stream, hangs up, and waits for the page to show the
// recording: a player per stream that the browser has read (so the file
// was served as audio it can play), whose caller stream is what the page
// sent, μ-law decoded, and whose heard stream begins with what it played.
func TestRecordingPlayer(t *testing.T) {
	ctx, sent, received := recordedCall(t, startHost(t), "recorded", "recording")
	type file struct {
		Stream  string `json:"stream"`
		Rate    int    `json:"rate"`
		Type    string `json:"type"`
		Samples string `json:"samples"`
	}
	files := eval[[]file](t, ctx, `window.voxhostRecording.files()`)
	durations := eval[[]float64](t, ctx, `window.voxhostRecording.durations()`)
	if len(files) != 4 || len(durations) != 4 {
		t.Fatalf("%d files and %d players, want one of each per stream", len(files), len(durations))
	}
	got := map[string][]int16{}
	for i, f := range files {
		if f.Type != "audio/wav" || f.Rate != 8000 {
			t.Errorf("%s: served as %q at %d Hz", f.Stream, f.Type, f.Rate)
		}
		got[f.Stream] = signal.Samples(decodeBase64(t, f.Samples))
		if want := float64(len(got[f.Stream])) / 8000; durations[i] < want-0.01 || durations[i] > want+0.01 {
			t.Errorf("%s: the player says %.3f s, the file holds %.3f s", f.Stream, durations[i], want)
		}
	}
	want := ulawSamples(sent)
	if len(got["caller"]) != len(want) {
		t.Fatalf("the recorded caller stream has %d samples; the page sent %d", len(got["caller"]), len(want))
	}
	for i := range want {
		if got["caller"][i] != want[i] {
			t.Fatalf("sample %d of the recorded caller stream is %d; the page sent %d", i, got["caller"][i], want[i])
		}
	}
	heard := ulawSamples(received)
	if len(got["heard"]) < len(heard) {
		t.Fatalf("the recorded heard stream has %d samples; the page played %d", len(got["heard"]), len(heard))
	}
	for i := range heard {
		if got["heard"][i] != heard[i] {
			t.Fatalf("sample %d of the recorded heard stream is %d; the page played %d", i, got["heard"][i], heard[i])
		}
	}
	t.Logf("the page plays the recording: %d ms sent, %d ms heard, as the page sent and played them", len(want)/8, len(got["heard"])/8)
}
