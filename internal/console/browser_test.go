package console_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/app"
	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/botsim"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/offline"
	"github.com/voxhost/voxhost/internal/signal"
)

// chromium is Debian's package, which make toolchains installs.
const chromium = "/usr/bin/chromium"

const (
	adminToken = "console-admin-secret"
	callToken  = "console-call-secret"
	// spec is the pipeline of the tests' route, as voxhost run takes it:
	// the vad's events, and a gain that shows the audio went through it.
	spec = "vad | dtmf | gain db=-6"
	// minSNR is the least signal-to-noise ratio of the audio the page
	// sends against the file its microphone plays, and of what the page
	// plays against voxhost run of that file: the audio is resampled twice
	// (the browser's 8 kHz file to the audio context's rate, the page's
	// capture back to 8 kHz) and μ-law coded each way, whose own SNR is
	// about 38 dB.
	minSNR = 30.0
	// eventSlackMs is how far an event on the page may be from where
	// voxhost run of the file puts it: a frame, since the call's frames
	// need not start at the file's.
	eventSlackMs = 20
)

// host is a voxhost serve with its admin listener and the console on the
// main listener.
type host struct {
	h                 *app.Host
	callURL, adminURL string
}

func startHost(t *testing.T) *host {
	t.Helper()
	return startHostWith(t, nil)
}

// startHostWith is startHost with tweak applied to its config.
func startHostWith(t *testing.T, tweak func(*config.Config)) *host {
	t.Helper()
	inbound := configStages(t, spec)
	// The bot of the relay route echoes what it hears.
	sim, err := botsim.New(botsim.Config{Mode: botsim.Echo})
	if err != nil {
		t.Fatal(err)
	}
	bot := httptest.NewServer(sim.Handler())
	t.Cleanup(bot.Close)
	cfg := config.Default()
	cfg.Listen, cfg.CacheDir, cfg.Console = "127.0.0.1:0", "-", true
	cfg.Admin = config.Admin{Listen: "127.0.0.1:0", Tokens: []string{adminToken}}
	cfg.Auth.Tokens = []string{callToken}
	cfg.Limits.DrainTimeout = time.Second
	cfg.Pipelines = map[string]config.Route{
		"talk": {Inbound: inbound},
		"bot": {Inbound: inbound, Upstream: &config.Upstream{
			URL: strings.Replace(bot.URL, "http://", "ws://", 1) + botsim.Paths[botsim.ProtocolRaw] + "/{call_id}", Protocol: botsim.ProtocolRaw}},
		"recorded": {Inbound: inbound, Recording: &config.Recording{Dir: t.TempDir(), What: config.RecordingStreams, MinFreeBytes: 1}},
	}
	cfg.DefaultPipeline = "talk"
	if tweak != nil {
		tweak(&cfg)
	}
	if err := app.Apply(&cfg, app.Overrides{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := app.New(ctx, cfg, slog.New(slog.NewTextHandler(&testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ready, done := make(chan net.Addr, 1), make(chan error, 1)
	go func() { done <- h.ListenAndServe(ctx, func(a net.Addr) { ready <- a }) }()
	hs := &host{h: h}
	select {
	case a := <-ready:
		hs.callURL, hs.adminURL = "http://"+a.String(), "http://"+h.AdminAddr().String()
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
		h.Close(context.Background())
	})
	return hs
}

// configStages is a pipeline spec, as voxhost run takes it, as a
// config's stages.
func configStages(t *testing.T, spec string) []config.Stage {
	t.Helper()
	stages, err := pipeline.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]config.Stage, len(stages))
	for i, st := range stages {
		out[i] = config.Stage(st)
	}
	return out
}

// testLog sends a host's warnings to the test's log.
type testLog struct{ t *testing.T }

func (l *testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// outputDir is where screenshots go: testdata/output, which git ignores,
// so that they outlive the test run.
func outputDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "output"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// speechFile is the fake microphone: silence, two phrases of the
// speech-like signal, silence.
func speechFile(t *testing.T) (path string, pcm []byte) {
	t.Helper()
	// The leading silence leaves the call time to connect: the fake
	// microphone starts with getUserMedia, before the call does.
	pcm = signal.Concat(signal.Silence(8000, 1500), signal.Speech(8000, 2.6), signal.Silence(8000, 1500))
	path = filepath.Join(t.TempDir(), "speech.wav")
	if err := audiofile.WritePCM(path, pcm, 8000); err != nil {
		t.Fatal(err)
	}
	return path, pcm
}

// browser starts headless Chromium with a fake microphone that plays mic
// once, and returns a tab's context.
func browser(t *testing.T, mic string) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("VOXHOST_BROWSER_REQUIRED") != "" {
			t.Fatalf("%s: %v (make toolchains installs Debian's chromium)", chromium, err)
		}
		t.Skipf("no %s (make toolchains installs it; VOXHOST_BROWSER_REQUIRED=1 makes this a failure)", chromium)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1100),
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-file-for-fake-audio-capture", mic+"%noloop"),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf),
		chromedp.WithBrowserOption(chromedp.WithConsolef(func(f string, a ...any) { t.Logf("page: "+f, a...) })))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first run starts the browser.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return ctx
}

// run runs actions with a generous deadline: the machine may be loaded.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs an action that returns a value, with run's deadline.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// eval evaluates a JavaScript expression.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return value(t, ctx, "evaluating "+expr, chromedp.Evaluate[T](expr))
}

// screenshot saves the page as testdata/output/NAME.png and logs where.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	path := filepath.Join(outputDir(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the %s view: %s", name, path)
}

// login opens the console at base and logs in with tok.
func login(t *testing.T, ctx context.Context, base, tok string) {
	t.Helper()
	run(t, ctx, "opening the console", chromedp.Navigate(base+"/console/"))
	run(t, ctx, "waiting for the log-in form", chromedp.WaitVisible(chromedp.ID("token")))
	run(t, ctx, "typing the token", chromedp.SendKeys(chromedp.ID("token"), tok))
	run(t, ctx, "logging in", chromedp.Click(chromedp.CSS("#login-form button[type=submit]")))
	run(t, ctx, "waiting for the console", chromedp.WaitVisible(chromedp.ID("app")))
}

// pageEvent is an event as the page shows it.
type pageEvent struct {
	TimeMs int             `json:"t_ms"`
	Plugin string          `json:"plugin"`
	Name   string          `json:"name"`
	Data   json.RawMessage `json:"data"`
}

func (e pageEvent) String() string { return fmt.Sprintf("%s %s at %d ms", e.Plugin, e.Name, e.TimeMs) }

// runOffline runs in through spec as voxhost run --pipeline spec would, and
// returns the output's samples and the events.
func runOffline(t *testing.T, in string) ([]int16, []pageEvent) {
	t.Helper()
	ctx := context.Background()
	stages, err := pipeline.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	def, err := hosttest.Catalog(t).Definition(ctx, "cli", stages)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out"+filepath.Ext(in))
	var events bytes.Buffer
	if _, err := offline.Run(ctx, offline.Options{Definition: def, In: in, Out: out, Events: &events}); err != nil {
		t.Fatal(err)
	}
	pcm, _, err := audiofile.ReadPCM(out)
	if err != nil {
		t.Fatal(err)
	}
	var evs []pageEvent
	dec := json.NewDecoder(&events)
	for dec.More() {
		var e pageEvent
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return signal.Samples(pcm), evs
}

// decodeBase64 reads what the page's test hook hands out.
func decodeBase64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// align finds the offset d (in samples, |d| <= maxLag) at which
// b[i] matches a[i+d] best, by normalized cross-correlation: first of the
// signals' envelopes at 1 kHz, then of the samples around it. It returns
// d and the correlation of the samples there.
func align(a, b []int16, maxLag int) (int, float64) {
	const decim = 8
	envelope := func(x []int16) []int16 {
		e := make([]int16, len(x)/decim)
		for i := range e {
			var sum int
			for _, v := range x[i*decim : (i+1)*decim] {
				sum += abs(int(v))
			}
			e[i] = int16(sum / decim)
		}
		return e
	}
	coarse, _ := bestOffset(envelope(a), envelope(b), -maxLag/decim, maxLag/decim)
	return bestOffset(a, b, coarse*decim-2*decim, coarse*decim+2*decim)
}

// bestOffset is align's search over d in [from, to].
func bestOffset(a, b []int16, from, to int) (int, float64) {
	best, bestC := 0, -2.0
	for d := from; d <= to; d++ {
		var ab, aa, bb float64
		for i := max(0, -d); i < len(b) && i+d < len(a); i++ {
			x, y := float64(a[i+d]), float64(b[i])
			ab += x * y
			aa += x * x
			bb += y * y
		}
		if c := ab / math.Sqrt(aa*bb+1e-9); c > bestC {
			best, bestC = d, c
		}
	}
	return best, bestC
}

// delayed is x delayed by frac of a sample (|frac| < 1), through a
// Hann-windowed sinc of 48 taps.
func delayed(x []int16, frac float64) []int16 {
	const half = 24
	var taps [2 * half]float64
	for k := range taps {
		// Tap k weighs x[i-half+1+k] for output i, at a distance of
		// (half-1-k)+frac samples from the output instant i-frac.
		u := float64(k-half+1) + frac
		w := 0.5 + 0.5*math.Cos(math.Pi*u/half)
		taps[k] = w
		if u != 0 {
			taps[k] *= math.Sin(math.Pi*u) / (math.Pi * u)
		}
	}
	out := make([]int16, len(x))
	for i := range x {
		var acc float64
		for k, h := range taps {
			if j := i - half + 1 + k; j >= 0 && j < len(x) {
				acc += h * float64(x[j])
			}
		}
		out[i] = int16(max(-32768, min(32767, math.Round(acc))))
	}
	return out
}

// overlap returns the parts of a and b that align's offset d lines up.
func overlap(a, b []int16, d int) ([]int16, []int16) {
	i := max(0, -d)
	n := min(len(b)-i, len(a)-(i+d))
	return a[i+d : i+d+n], b[i : i+n]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// snr is the ratio of want's power to that of the difference got-want,
// in dB, over want's length.
func snr(want, got []int16) float64 {
	var sig, noise float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		sig += float64(want[i]) * float64(want[i])
		noise += d * d
	}
	return 10 * math.Log10(sig/(noise+1e-9))
}

func ulawSamples(ulaw []byte) []int16 {
	pcm := make([]byte, 2*len(ulaw))
	codec.DecodeUlaw(pcm, ulaw)
	return signal.Samples(pcm)
}

// callState is the page's test hook's view of its call.
type callState struct {
	State  string      `json:"state"`
	CallID string      `json:"callID"`
	SentMs int         `json:"sentMs"`
	Events []pageEvent `json:"events"`
	Format struct {
		Codec string `json:"codec"`
		Rate  int    `json:"rate"`
	} `json:"format"`
}

// placeCall places a call from the page on route, with the Audio choice
// codec, and waits until audio comes back: a route that refuses the
// call's rate closes the connection after the upgrade, and with "auto"
// the page then calls again at the next format.
func placeCall(t *testing.T, ctx context.Context, route, codec string) {
	t.Helper()
	run(t, ctx, "placing the call",
		chromedp.SetValue(chromedp.ID("route"), route),
		chromedp.SetValue(chromedp.ID("codec"), codec),
		chromedp.Click(chromedp.ID("call-button")),
	)
	const answered = `(() => {
  const c = window.voxhostConsole.call();
  if (!c || c.state === 'starting' || (c.state === 'connected' && !c.bytesReceived)) return null;
  return c.state;
})()`
	if st := value(t, ctx, "waiting for the call's audio", chromedp.Poll[string](answered, chromedp.WithPollingTimeout(60*time.Second))); st != "connected" {
		t.Fatalf("the call is %s: %s", st, text(t, ctx, "#call-status"))
	}
}

// call places a call from the page on route, with the Audio choice codec,
// lets the microphone's file (fileMs long) play out and a second more,
// runs during while the call is live, hangs up and returns what the page
// saw, sent and played.
func call(t *testing.T, ctx context.Context, route, codec string, fileMs int, during func(callState)) (st callState, sent, received []byte) {
	t.Helper()
	placeCall(t, ctx, route, codec)
	deadline := time.Now().Add(60 * time.Second)
	for {
		st = eval[callState](t, ctx, `window.voxhostConsole.call()`)
		if st.State != "connected" {
			t.Fatalf("the call is %s: %s", st.State, text(t, ctx, "#call-status"))
		}
		if st.SentMs >= fileMs+1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s the page has sent %d ms of audio", st.SentMs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if during != nil {
		during(st)
	}
	run(t, ctx, "hanging up",
		chromedp.Click(chromedp.ID("tab-call")),
		chromedp.Click(chromedp.ID("call-button")),
		chromedp.WaitReady(chromedp.CSS(`body[data-call="ended"]`)),
	)
	sent = decodeBase64(t, eval[string](t, ctx, `window.voxhostConsole.sent()`))
	received = decodeBase64(t, eval[string](t, ctx, `window.voxhostConsole.received()`))
	st = eval[callState](t, ctx, `window.voxhostConsole.call()`)
	t.Logf("the page sent %d ms and received %d ms of μ-law; it showed %v", len(sent)/8, len(received)/8, st.Events)
	return st, sent, received
}

// captureAttempts is how many calls a test places while what the page
// sent differs from the file. Chromium's fake microphone and the audio
// thread that runs the page's capture are real time: on a busy machine
// they drop or repeat blocks of the file (1.1 dB SNR in a full make test
// on two cores; every call of three, 2 dB and less, beside two CPU hogs).
// The host's own checks (the first of checkCall's) hold on every attempt,
// and the capture itself is checked without a clock (captureOffline).
const captureAttempts = 3

// callAndCheck places a μ-law call from the page (call) and checks it
// (checkCall), calling again while only the microphone's capture differs
// from the file. The page's capture chain (the worklet's resampler, the
// μ-law coder) must reproduce the file within minSNR when it runs without
// a clock (captureOffline), whatever the machine is doing; a live call
// whose real-time capture glitched on every attempt is logged, not
// failed: that is the machine's, and an offline capture that passes shows
// the page's part is right.
func callAndCheck(t *testing.T, ctx context.Context, route, codec, mic string, micPCM []byte, during func(callState)) {
	t.Helper()
	offSNR := offlineCaptureSNR(t, ctx, mic, micPCM)
	if offSNR < minSNR {
		t.Errorf("the page's capture, rendered offline, is %.1f dB SNR against the file: want at least %g dB", offSNR, minSNR)
	}
	for attempt := 1; ; attempt++ {
		st, sent, received := call(t, ctx, route, codec, len(micPCM)/2/8, during)
		why := checkCall(t, ctx, st, sent, received, mic, micPCM)
		if why == "" {
			return
		}
		if attempt == captureAttempts {
			t.Logf("%s (%d calls): the real-time capture glitched on every call, as it does on a busy machine; "+
				"the same capture rendered offline is %.1f dB SNR", why, attempt, offSNR)
			return
		}
		t.Logf("call %d: %s; Chromium's fake microphone glitches under load: calling again", attempt, why)
	}
}

// offlineCaptureSNR renders the microphone's file through the page's
// capture as a call does (the browser decodes the 8 kHz file at the
// audio context's rate, the worklet resamples it back to 8 kHz, the page
// codes it as μ-law), but in an OfflineAudioContext, which runs as fast
// as it can rather than in real time: nothing a busy machine does changes
// the result. It returns that audio's SNR against the file, at the best
// alignment and fraction of a sample, as checkCall measures a live call.
func offlineCaptureSNR(t *testing.T, ctx context.Context, mic string, micPCM []byte) float64 {
	t.Helper()
	wav, err := os.ReadFile(mic)
	if err != nil {
		t.Fatal(err)
	}
	js := fmt.Sprintf(`(async (wav64) => {
  const {encodeUlaw, toBase64} = await import('./audio.js');
  const live = new AudioContext();
  const rate = live.sampleRate; // the rate a call's context runs at
  await live.close();
  const bytes = Uint8Array.from(atob(wav64), (c) => c.charCodeAt(0));
  const decoder = new OfflineAudioContext(1, 1, rate);
  const file = await decoder.decodeAudioData(bytes.buffer);
  const ctx = new OfflineAudioContext(1, file.length + rate, rate);
  await ctx.audioWorklet.addModule('capture-worklet.js');
  const capture = new AudioWorkletNode(ctx, 'voxhost-capture', {numberOfInputs: 1, numberOfOutputs: 1,
    outputChannelCount: [1], channelCount: 1, channelCountMode: 'explicit', processorOptions: {rate: 8000}});
  const frames = [];
  capture.port.onmessage = (e) => frames.push(encodeUlaw(new Int16Array(e.data)));
  const src = ctx.createBufferSource();
  src.buffer = file;
  src.connect(capture).connect(ctx.destination);
  src.start();
  await ctx.startRendering();
  // The worklet's messages arrive as tasks after the rendering: until
  // they stop coming.
  for (let n = -1; n !== frames.length;) {
    n = frames.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const out = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of frames) { out.set(f, at); at += f.length; }
  return toBase64(out);
})(%q)`, base64.StdEncoding.EncodeToString(wav))
	got := ulawSamples(decodeBase64(t, value(t, ctx, "capturing the file offline", chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))))
	mic16 := signal.Samples(micPCM)
	if len(got) < len(mic16)*9/10 {
		t.Fatalf("the offline capture made %d ms of audio of the file's %d ms", len(got)/8, len(mic16)/8)
	}
	d, corr := align(mic16, got, 800)
	best := math.Inf(-1)
	for f := -0.5; f < 0.5; f += 1.0 / 16 {
		best = max(best, snr(overlap(delayed(mic16, f), got, d)))
	}
	t.Logf("the page's capture of the file, rendered offline: %d ms, %d samples from the file's start (correlation %.4f), %.1f dB SNR", len(got)/8, d, corr, best)
	return best
}

// checkCall compares a μ-law call the page placed with voxhost run:
//
//  1. what the page played is what voxhost run makes of what the page
//     sent: the same samples, bit for bit, and the same events (a failure
//     here fails the test);
//  2. the audio the page sent is the microphone's file, resampled twice
//     (by Chromium to the audio context's rate, by the page back to 8 kHz)
//     and μ-law coded, within minSNR at the best sub-sample alignment; and what the page played is voxhost
//     run of the file within minSNR;
//  3. the vad's events for the file's speech are on the page, where
//     voxhost run of the file put them (shifted by where the call started)
//     within eventSlackMs.
//
// It returns why 2 or 3 does not hold, "" when they do: those depend on
// Chromium's capture of the file as well as on the page.
func checkCall(t *testing.T, ctx context.Context, st callState, sent, received []byte, mic string, micPCM []byte) string {
	t.Helper()
	if st.Format.Codec != "mulaw" || st.Format.Rate != 8000 {
		t.Fatalf("the call ran at %+v, want μ-law 8 kHz", st.Format)
	}
	if len(received) < len(sent)*9/10 {
		t.Fatalf("the page received %d ms of audio for the %d ms it sent", len(received)/8, len(sent)/8)
	}

	sentFile := filepath.Join(t.TempDir(), "sent.ul")
	if err := os.WriteFile(sentFile, sent, 0o644); err != nil {
		t.Fatal(err)
	}
	want, wantEvents := runOffline(t, sentFile)
	got := ulawSamples(received)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("sample %d (%d ms) the page played is %d, voxhost run of the audio it sent made %d", i, i/8, got[i], want[i])
		}
	}
	var played []pageEvent
	for _, e := range wantEvents {
		if e.TimeMs <= len(received)/8 {
			played = append(played, e)
		}
	}
	if fmt.Sprint(st.Events) != fmt.Sprint(played) {
		t.Errorf("the page showed the events\n%v\nvoxhost run of the audio it sent emitted\n%v", st.Events, played)
	}

	// The fake microphone starts with getUserMedia, before the call
	// connects: the call's audio starts d samples into the file.
	// The page's resampler starts at any point between two of the
	// file's samples: the file is compared at the fraction of a sample
	// that fits best.
	mic16 := signal.Samples(micPCM)
	d, corr := align(mic16, ulawSamples(sent), 16000)
	frac, sentSNR := 0.0, math.Inf(-1)
	for f := -0.5; f < 0.5; f += 1.0 / 16 {
		if v := snr(overlap(delayed(mic16, f), ulawSamples(sent), d)); v > sentSNR {
			frac, sentSNR = f, v
		}
	}
	fileOut, fileEvents := runOffline(t, mic)
	playedSNR := snr(overlap(delayed(fileOut, frac), got, d))
	t.Logf("the call starts %.2f ms into the file (correlation %.4f); sent audio against the file: %.1f dB SNR; played audio against voxhost run of the file: %.1f dB SNR",
		(float64(d)-frac)/8, corr, sentSNR, playedSNR)
	if sentSNR < minSNR || playedSNR < minSNR {
		return fmt.Sprintf("sent audio against the file %.1f dB SNR, played audio against voxhost run of the file %.1f dB: want at least %g dB both ways", sentSNR, playedSNR, minSNR)
	}

	var speech []pageEvent
	for _, e := range fileEvents {
		if e.Plugin == "vad" {
			speech = append(speech, pageEvent{TimeMs: e.TimeMs - d/8, Plugin: e.Plugin, Name: e.Name})
		}
	}
	if len(speech) < 2 {
		t.Fatalf("voxhost run of the file emitted %v: want speech_start and speech_end", fileEvents)
	}
	table := value(t, ctx, "reading the events table", chromedp.Text(chromedp.ID("events")))
	if !strings.Contains(table, "speech_start") || !strings.Contains(table, "speech_end") {
		t.Errorf("the events table shows %q", table)
	}
	if len(st.Events) != len(speech) {
		return fmt.Sprintf("the page showed %v; voxhost run of the file, shifted by the %d ms the call started late, emitted %v", st.Events, d/8, speech)
	}
	for i, e := range st.Events {
		if e.Plugin != speech[i].Plugin || e.Name != speech[i].Name || abs(e.TimeMs-speech[i].TimeMs) > eventSlackMs {
			return fmt.Sprintf("event %d: the page showed %v, voxhost run of the file (shifted) %v; want the same within %d ms", i, e, speech[i], eventSlackMs)
		}
	}
	return ""
}

// TestCallFromTheMicrophone places an echo call from the console on the
// admin listener, with Chromium's fake microphone playing a file of
// speech; it checks what the page shows and plays against voxhost run, the
// plugins' costs and the list of live calls.
func TestCallFromTheMicrophone(t *testing.T) {
	h := startHost(t)
	mic, micPCM := speechFile(t)
	ctx := browser(t, mic)
	login(t, ctx, h.adminURL, adminToken)
	callAndCheck(t, ctx, "talk", "mulaw-8000", mic, micPCM, func(st callState) {
		// Each plugin's cost per frame, from GET /calls/{id}.
		run(t, ctx, "waiting for the plugins' costs", chromedp.WaitReady(chromedp.CSS(`#costs tbody tr:nth-child(3)`)))
		costs := text(t, ctx, "#costs")
		for _, name := range []string{"vad", "dtmf", "gain"} {
			if !strings.Contains(costs, name) {
				t.Errorf("the cost table does not show %s: %q", name, costs)
			}
		}
		// The host's lanes: the route keeps no far-end reference, so the
		// timeline has a processed lane and no reference lane.
		if info := eval[*liveInfo](t, ctx, `window.voxhostLive.info()`); info == nil || info.Reference {
			t.Errorf("the host's tap of a route without a reference says %+v", info)
		}
		if !eval[bool](t, ctx, `document.getElementById('live-reference-key').hidden`) {
			t.Error("the timeline's key shows a reference lane for a route without one")
		}
		screenshot(t, ctx, "call")
		// The call is in the list of live calls.
		row := fmt.Sprintf(`#calls tr[data-id=%q]`, st.CallID)
		run(t, ctx, "listing the live calls", chromedp.Click(chromedp.ID("tab-calls")), chromedp.WaitReady(chromedp.CSS(row)))
		if text := text(t, ctx, row); !strings.Contains(text, "talk") || !strings.Contains(text, "8 kHz μ-law") {
			t.Errorf("the live call's row: %q", text)
		}
		screenshot(t, ctx, "calls")
	})
}

// TestRelayCallOnTheMainListener logs in to the console on the main
// listener (console: true) with a call token and calls a relay route,
// whose bot echoes: the page plays the bot's audio. "auto" asks for L16
// 16 kHz first, which the route refuses (its bot leg is 8 kHz), and falls
// back to μ-law 8 kHz.
func TestRelayCallOnTheMainListener(t *testing.T) {
	h := startHost(t)
	mic, micPCM := speechFile(t)
	ctx := browser(t, mic)
	login(t, ctx, h.callURL, callToken)
	if hidden := eval[bool](t, ctx, `document.getElementById('tab-calls').hidden`); !hidden {
		t.Error("the main listener's console shows the list of live calls")
	}
	callAndCheck(t, ctx, "bot", "auto", mic, micPCM, func(callState) {
		screenshot(t, ctx, "relay")
	})
}

// text is the text of the element sel.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return value(t, ctx, "reading "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// TestHearAFile uploads a WAV in the console's "hear a file" view and
// checks the processed audio and the events it shows against voxhost run
// of the same file and pipeline: the same samples, bit for bit, and the
// same events.
func TestHearAFile(t *testing.T) {
	h := startHost(t)
	_, pcm := speechFile(t)
	// A file with a DTMF key too, so that the table has more than speech.
	file := filepath.Join(t.TempDir(), "speech and key.wav")
	if err := audiofile.WritePCM(file, signal.Concat(pcm, signal.DTMF(8000, '5', 120, 0.3, 0, 0), signal.Silence(8000, 300)), 8000); err != nil {
		t.Fatal(err)
	}
	ctx := browser(t, file)
	run(t, ctx, "opening the console", chromedp.Navigate(h.adminURL+"/console/"))
	run(t, ctx, "waiting for the log-in form", chromedp.WaitVisible(chromedp.ID("token")))
	screenshot(t, ctx, "login")
	login(t, ctx, h.adminURL, adminToken)
	// With the keyboard: the arrow keys move between the views' tabs,
	// Enter on the focused button runs the file.
	run(t, ctx, "choosing the view with the keyboard",
		chromedp.Focus(chromedp.ID("tab-call")),
		chromedp.KeyEvent(kb.ArrowRight+kb.ArrowRight),
		chromedp.WaitVisible(chromedp.ID("file-form")),
	)
	if focused := eval[string](t, ctx, `document.activeElement.id`); focused != "tab-file" {
		t.Errorf("after two right arrows from the Call tab, %q has the focus", focused)
	}
	run(t, ctx, "running the file",
		chromedp.SetUploadFiles(chromedp.ID("file"), []string{file}),
		chromedp.SetValue(chromedp.ID("file-route"), "talk"),
		chromedp.Focus(chromedp.ID("file-run")),
		chromedp.KeyEvent(kb.Enter),
		chromedp.WaitReady(chromedp.CSS(`body[data-file="done"], body[data-file="failed"]`)),
	)
	if st := text(t, ctx, "#file-status"); eval[string](t, ctx, `document.body.dataset.file`) != "done" {
		t.Fatalf("the run failed: %s", st)
	}
	screenshot(t, ctx, "file")
	type fileResult struct {
		Events  []pageEvent `json:"events"`
		Rate    int         `json:"rate"`
		Samples string      `json:"samples"`
		Stages  []string    `json:"stages"`
	}
	res := eval[fileResult](t, ctx, `window.voxhostConsole.file()`)
	got := signal.Samples(decodeBase64(t, res.Samples))
	want, wantEvents := runOffline(t, file)
	if res.Rate != 8000 || len(got) != len(want) {
		t.Fatalf("the page shows %d samples at %d Hz; voxhost run made %d at 8000 Hz", len(got), res.Rate, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sample %d of the processed file is %d on the page, %d from voxhost run", i, got[i], want[i])
		}
	}
	if fmt.Sprint(res.Events) != fmt.Sprint(wantEvents) {
		t.Errorf("the page shows the events\n%v\nvoxhost run emitted\n%v", res.Events, wantEvents)
	}
	t.Logf("%d samples and %d events (%v) as voxhost run --pipeline %q makes them", len(got), len(res.Events), res.Events, spec)
	rows := eval[int](t, ctx, `document.querySelectorAll('#file-events tbody tr').length`)
	if rows != len(wantEvents) {
		t.Errorf("the events table has %d rows, want %d", rows, len(wantEvents))
	}
}
