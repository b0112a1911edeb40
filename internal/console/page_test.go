package console_test

// What a newcomer tripped over on the page (issue 21, item 8), each
// checked in Chromium as they met it.

import (
	"context"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/signal"
)

// waitFor waits until the page's expression expr is true.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	value(t, ctx, "waiting until "+what, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(60*time.Second)))
}

// loggedIn starts a host and a browser whose microphone plays mic, and
// logs in to the console on the admin listener.
func loggedIn(t *testing.T, mic string) (*host, context.Context) {
	t.Helper()
	h := startHost(t)
	ctx := browser(t, mic)
	login(t, ctx, h.adminURL, adminToken)
	return h, ctx
}

// wavFile writes pcm at rate as a WAV file named name and returns its path.
func wavFile(t *testing.T, name string, pcm []byte, rate int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := audiofile.WritePCM(path, pcm, rate); err != nil {
		t.Fatal(err)
	}
	return path
}

// speechWAV is a short file the talk route takes, with speech for the vad.
func speechWAV(t *testing.T) string {
	t.Helper()
	return wavFile(t, "speech.wav", signal.Concat(signal.Silence(8000, 300), signal.Speech(8000, 1.2), signal.Silence(8000, 300)), 8000)
}

// wideWAV is a 48 kHz file, which POST /run refuses (it takes 8 kHz).
func wideWAV(t *testing.T) string {
	t.Helper()
	return wavFile(t, "wide.wav", signal.Speech(48000, 0.5), 48000)
}

// runFile runs path through the talk route in the "hear a file" view and
// returns how it went: "done" or "failed".
func runFile(t *testing.T, ctx context.Context, path string) string {
	t.Helper()
	run(t, ctx, "running "+filepath.Base(path),
		chromedp.Click(chromedp.ID("tab-file")),
		chromedp.WaitVisible(chromedp.ID("file-form")),
		chromedp.Evaluate[chromedp.Void](`delete document.body.dataset.file`),
		chromedp.SetUploadFiles(chromedp.ID("file"), []string{path}),
		chromedp.SetValue(chromedp.ID("file-route"), "talk"),
		chromedp.Click(chromedp.ID("file-run")),
		chromedp.WaitReady(chromedp.CSS(`body[data-file="done"], body[data-file="failed"]`)),
	)
	return eval[string](t, ctx, `document.body.dataset.file`)
}

// fileView is what the "hear a file" view shows.
type fileView struct {
	Hidden bool   `json:"hidden"`
	InSrc  string `json:"inSrc"`
	OutSrc string `json:"outSrc"`
	Href   string `json:"href"`
	Rows   int    `json:"rows"`
	// Inked is how many of the four drawings have a pixel drawn.
	Inked  int    `json:"inked"`
	Result bool   `json:"result"`
	Status string `json:"status"`
}

const fileViewJS = `(() => {
  const $ = (id) => document.getElementById(id);
  const inked = ['file-in-wave', 'file-in-spec', 'file-out-wave', 'file-out-spec'].filter((id) => {
    const c = $(id);
    if (!c.width || !c.height) return false;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 3; i < d.length; i += 4) if (d[i]) return true;
    return false;
  }).length;
  return {hidden: $('file-result').hidden, inSrc: $('file-in-audio').getAttribute('src') || '',
    outSrc: $('file-out-audio').getAttribute('src') || '', href: $('file-download').getAttribute('href') || '',
    rows: $('file-events').tBodies[0].rows.length, inked, result: window.voxhostConsole.file() !== null,
    status: $('file-status').textContent};
})()`

// TestARefusedFileLeavesNoEarlierResult runs a file, then one the host
// refuses (48 kHz): the first file's players, drawings, events and
// download must go, leaving the refusal alone on the page.
func TestARefusedFileLeavesNoEarlierResult(t *testing.T) {
	good := speechWAV(t)
	_, ctx := loggedIn(t, good)
	if st := runFile(t, ctx, good); st != "done" {
		t.Fatalf("the 8 kHz file: %s, %s", st, text(t, ctx, "#file-status"))
	}
	if v := eval[fileView](t, ctx, fileViewJS); v.Hidden || v.InSrc == "" || v.OutSrc == "" || v.Href == "" || v.Rows == 0 || v.Inked != 4 || !v.Result {
		t.Fatalf("the 8 kHz file's result is not all on the page: %+v", v)
	}
	if st := runFile(t, ctx, wideWAV(t)); st != "failed" {
		t.Fatalf("the 48 kHz file: %s, %s; want it refused", st, text(t, ctx, "#file-status"))
	}
	v := eval[fileView](t, ctx, fileViewJS)
	t.Logf("the refusal: %q", v.Status)
	if !v.Hidden || v.InSrc != "" || v.OutSrc != "" || v.Href != "" || v.Rows != 0 || v.Inked != 0 || v.Result {
		t.Errorf("after a refused file the page still shows the last result: %+v", v)
	}
	if !strings.Contains(v.Status, "Hz") {
		t.Errorf("the refusal does not say what is wrong with the file: %q", v.Status)
	}
	screenshot(t, ctx, "file-refused")
}

// statusColours is #file-status's colour and the page's error colour.
const statusColoursJS = `(() => {
  const probe = document.createElement('span');
  probe.style.color = 'var(--error)';
  document.body.append(probe);
  const error = getComputedStyle(probe).color;
  probe.remove();
  return [getComputedStyle(document.getElementById('file-status')).color, error];
})()`

// TestARefusedFileIsShownAsAnError: the message of a refused file is in
// the page's error colour, and a file that runs is not.
func TestARefusedFileIsShownAsAnError(t *testing.T) {
	good := speechWAV(t)
	_, ctx := loggedIn(t, good)
	if st := runFile(t, ctx, wideWAV(t)); st != "failed" {
		t.Fatalf("the 48 kHz file: %s; want it refused", st)
	}
	if c := eval[[2]string](t, ctx, statusColoursJS); c[0] != c[1] {
		t.Errorf("a refused file's message is %s, the page's error colour %s", c[0], c[1])
	}
	if st := runFile(t, ctx, good); st != "done" {
		t.Fatalf("the 8 kHz file: %s", st)
	}
	if c := eval[[2]string](t, ctx, statusColoursJS); c[0] == c[1] {
		t.Errorf("a file that ran is reported in the error colour %s", c[0])
	}
}

// TestTheKeypadWorksInACallAndShowsWhatItSent: with no call the DTMF keys
// are disabled; in an echo call, whose dtmf plugin hears tones and not
// these key presses, the page shows each key it sent, beside the keys and
// in the events; after the call they are disabled again.
func TestTheKeypadWorksInACallAndShowsWhatItSent(t *testing.T) {
	mic, _ := speechFile(t)
	_, ctx := loggedIn(t, mic)
	const keysDisabled = `[...document.querySelectorAll('#keypad button')].every((b) => b.disabled)`
	if !eval[bool](t, ctx, keysDisabled) {
		t.Fatal("the DTMF keys are enabled with no call")
	}
	placeCall(t, ctx, "talk", "mulaw-8000")
	if eval[bool](t, ctx, `[...document.querySelectorAll('#keypad button')].some((b) => b.disabled)`) {
		t.Fatal("in a call, some DTMF keys are disabled")
	}
	run(t, ctx, "pressing 5 and #",
		chromedp.Click(chromedp.CSS(`#keypad [data-digit="5"]`)),
		chromedp.Click(chromedp.CSS(`#keypad [data-digit="#"]`)),
	)
	waitFor(t, ctx, "the page shows both keys sent", `document.getElementById('dtmf-sent').textContent.includes('5 #')`)
	if rows := eval[int](t, ctx, `document.querySelectorAll('#events tr[data-name="dtmf_sent"]').length`); rows != 2 {
		t.Errorf("the events table shows %d keys sent, want 2", rows)
	}
	if keys := eval[[]pageEvent](t, ctx, `window.voxhostConsole.call().keys`); len(keys) != 2 || string(keys[0].Data) != `"5"` || string(keys[1].Data) != `"#"` {
		t.Errorf("the call's keys: %v", keys)
	}
	screenshot(t, ctx, "call-keys")
	run(t, ctx, "hanging up", chromedp.Click(chromedp.ID("call-button")), chromedp.WaitReady(chromedp.CSS(`body[data-call="ended"]`)))
	if !eval[bool](t, ctx, keysDisabled) {
		t.Error("after the call the DTMF keys are enabled")
	}
	if sent := text(t, ctx, "#dtmf-sent"); !strings.Contains(sent, "5 #") {
		t.Errorf("after the call the page no longer shows the keys it sent: %q", sent)
	}
}

// TestAWrongTokenIsExplainedToAPerson: the page's message for a token
// the host does not take is for someone at the page, not curl's
// "send Authorization: Bearer TOKEN".
func TestAWrongTokenIsExplainedToAPerson(t *testing.T) {
	h := startHost(t)
	ctx := browser(t, speechWAV(t))
	for _, l := range []struct{ base, noun string }{{h.adminURL, "admin token"}, {h.callURL, "call token"}} {
		run(t, ctx, "logging in with a wrong token",
			chromedp.Navigate(l.base+"/console/"),
			chromedp.WaitVisible(chromedp.ID("token")),
			chromedp.SendKeys(chromedp.ID("token"), "not-the-token"),
			chromedp.Click(chromedp.CSS("#login-form button[type=submit]")),
		)
		waitFor(t, ctx, "the page says why", `document.getElementById('login-error').textContent !== ''`)
		msg := text(t, ctx, "#login-error")
		t.Logf("%s: %q", l.base, msg)
		if strings.Contains(msg, "Authorization") || strings.Contains(msg, "Bearer") || strings.Contains(msg, "TOKEN") {
			t.Errorf("%s: the page tells a person to send an HTTP header: %q", l.base, msg)
		}
		if !strings.Contains(msg, "did not accept") || !strings.Contains(msg, l.noun) {
			t.Errorf("%s: the message does not say the host refused the %s: %q", l.base, l.noun, msg)
		}
		if !eval[bool](t, ctx, `!document.getElementById('login').hidden`) {
			t.Errorf("%s: a wrong token left the log-in form", l.base)
		}
	}
}

// openSpanJS waits, during a call, for the vad's speech span to be open
// (a speech_start and no speech_end yet) for a second, in the call's
// first 8.5 s (the timeline then shows 0 to 10 s), has the page draw the
// timeline and reads the top of its input lane: how many columns between
// the start and now are shaded as speech, and how many after now (300 ms
// on, clear of the start's label) are.
const openSpanJS = `() => {
  const st = window.voxhostConsole.call();
  if (!st || st.state !== 'connected') return {state: st ? st.state : 'none'};
  const vad = st.events.filter((e) => e.plugin === 'vad');
  const last = vad[vad.length - 1];
  if (!last || last.name !== 'speech_start' || st.sentMs < last.t_ms + 1000) return null;
  if (st.sentMs > 8500) return {state: 'late', sentMs: st.sentMs};
  // The page redraws on a resize: the timeline then shows st.sentMs as now.
  window.dispatchEvent(new Event('resize'));
  const canvas = document.getElementById('timeline');
  const g = canvas.getContext('2d');
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const probe = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
  probe.fillStyle = css('--lane');
  probe.fillRect(0, 0, 1, 1);
  const lane = [...probe.getImageData(0, 0, 1, 1).data];
  probe.fillStyle = css('--speech-bg');
  probe.fillRect(0, 0, 1, 1);
  const shade = [...probe.getImageData(0, 0, 1, 1).data];
  const ratio = canvas.width / canvas.clientWidth;
  const y = Math.round(((canvas.clientHeight - 20) / 2) * 0.1 * ratio);
  const row = g.getImageData(0, y, canvas.width, 1).data;
  const is = (x, want) => want.every((v, k) => Math.abs(row[4 * x + k] - v) <= 2);
  const count = (fromMs, toMs, want) => {
    let n = 0;
    for (let x = Math.ceil(fromMs / 10000 * canvas.width); x < Math.min(canvas.width, toMs / 10000 * canvas.width); x++) if (is(x, want)) n++;
    return n;
  };
  return {state: 'open', start: last.t_ms, sentMs: st.sentMs,
    shadedBefore: count(last.t_ms + 100, st.sentMs - 300, shade),
    shadedAfter: count(st.sentMs + 300, 10000, shade),
    laneAfter: count(st.sentMs + 300, 10000, lane),
    columnsAfter: Math.floor(10000 * canvas.width / 10000) - Math.ceil((st.sentMs + 300) / 10000 * canvas.width)};
}`

// TestAnOpenSpeechSpanEndsAtNow calls with a microphone that speaks for
// six seconds and reads the timeline while the vad's speech span is open
// in the call's first ten seconds: the span is shaded up to now and not
// past it.
func TestAnOpenSpeechSpanEndsAtNow(t *testing.T) {
	_, ctx := loggedIn(t, wavFile(t, "long speech.wav", signal.Concat(signal.Silence(8000, 1500), signal.Speech(8000, 6), signal.Silence(8000, 1000)), 8000))
	placeCall(t, ctx, "talk", "mulaw-8000")
	type span struct {
		State                     string
		Start, SentMs             int
		ShadedBefore, ShadedAfter int
		LaneAfter, ColumnsAfter   int
	}
	got := value(t, ctx, "waiting for an open speech span", chromedp.PollFunction[span](openSpanJS, chromedp.WithPollingTimeout(60*time.Second)))
	t.Logf("speech from %d ms, now %d ms: %+v", got.Start, got.SentMs, got)
	if got.State != "open" {
		t.Fatalf("no open speech span in the call's first 8.5 s: %+v (events %v)", got, eval[callState](t, ctx, `window.voxhostConsole.call()`).Events)
	}
	if got.ShadedBefore == 0 {
		t.Errorf("the open span is not drawn between its start and now: %+v", got)
	}
	if got.ShadedAfter != 0 || got.LaneAfter != got.ColumnsAfter {
		t.Errorf("of the %d columns after now, %d are shaded as speech and %d plain: want none shaded", got.ColumnsAfter, got.ShadedAfter, got.LaneAfter)
	}
	screenshot(t, ctx, "call-open-span")
	run(t, ctx, "hanging up", chromedp.Click(chromedp.ID("call-button")), chromedp.WaitReady(chromedp.CSS(`body[data-call="ended"]`)))
}

// pageLog follows a tab's network answers and console entries.
type pageLog struct {
	mu       sync.Mutex
	failures []string
	icon     chan string
}

func listenPage(t *testing.T, ctx context.Context) *pageLog {
	t.Helper()
	l := &pageLog{icon: make(chan string, 16)}
	if err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 {
				l.mu.Lock()
				l.failures = append(l.failures, e.Response.URL+": HTTP "+e.Response.StatusText)
				l.mu.Unlock()
			}
			if strings.HasPrefix(path.Base(e.Response.URL), "favicon.") {
				select {
				case l.icon <- e.Response.URL + " " + e.Response.MimeType:
				default:
				}
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				l.mu.Lock()
				l.failures = append(l.failures, "console: "+e.Entry.Text+" "+e.Entry.URL)
				l.mu.Unlock()
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *pageLog) taken() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.failures
	l.failures = nil
	return f
}

// TestNothingIsRefusedBeforeLogIn opens the page on both listeners: the
// page and its icon load, and nothing the browser would log as an error
// (a 401 for the API or /favicon.ico) happens before the log-in. On a
// listener without tokens the page needs no log-in and asks for none.
func TestNothingIsRefusedBeforeLogIn(t *testing.T) {
	h := startHost(t)
	ctx := browser(t, speechWAV(t))
	l := listenPage(t, ctx)
	for _, base := range []string{h.adminURL, h.callURL} {
		run(t, ctx, "opening the console", chromedp.Navigate(base+"/console/"), chromedp.WaitVisible(chromedp.ID("token")))
		select {
		case icon := <-l.icon:
			t.Logf("%s: icon %s", base, icon)
			if !strings.HasSuffix(strings.Fields(icon)[0], "/console/favicon.svg") || !strings.Contains(icon, "image/svg+xml") {
				t.Errorf("%s: the page's icon is %s", base, icon)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: the browser fetched no icon in 60 s", base)
		}
		if f := l.taken(); len(f) > 0 {
			t.Errorf("%s, before the log-in: %s", base, strings.Join(f, "; "))
		}
	}

	var configured int
	open := startHostWith(t, func(c *config.Config) { c.Auth.Tokens, configured = nil, len(c.Pipelines) })
	run(t, ctx, "opening the console of a listener without tokens", chromedp.Navigate(open.callURL+"/console/"), chromedp.WaitVisible(chromedp.ID("app")))
	select {
	case <-l.icon:
	case <-time.After(60 * time.Second):
		t.Fatal("without tokens: the browser fetched no icon in 60 s")
	}
	if routes := eval[int](t, ctx, `document.querySelectorAll('#route option').length`); routes != configured {
		t.Errorf("without tokens the page lists %d routes, want the %d configured", routes, configured)
	}
	if f := l.taken(); len(f) > 0 {
		t.Errorf("without tokens: %s", strings.Join(f, "; "))
	}
}

// TestTheViewsFitANarrowScreen: at 420 px wide (a phone), no view of the
// page scrolls sideways, and the keypad is a phone's 3 by 4.
func TestTheViewsFitANarrowScreen(t *testing.T) {
	h := startHost(t)
	ctx := browser(t, speechWAV(t))
	run(t, ctx, "narrowing the window", chromedp.EmulateViewport(420, 900))
	login(t, ctx, h.adminURL, adminToken)
	for _, tab := range []string{"tab-call", "tab-calls", "tab-file"} {
		run(t, ctx, "showing "+tab, chromedp.Click(chromedp.ID(tab)), chromedp.WaitVisible(chromedp.ID(strings.Replace(tab, "tab-", "view-", 1))))
		if w := eval[[2]int](t, ctx, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`); w[0] > w[1] {
			t.Errorf("%s at 420 px: the page is %d px wide in a %d px window", tab, w[0], w[1])
		}
	}
	run(t, ctx, "showing the call view", chromedp.Click(chromedp.ID("tab-call")), chromedp.WaitVisible(chromedp.ID("keypad")))
	if rows := eval[int](t, ctx, `new Set([...document.querySelectorAll('#keypad button')].map((b) => b.offsetTop)).size`); rows != 4 {
		t.Errorf("at 420 px the keypad has %d rows, want 4", rows)
	}
	screenshot(t, ctx, "narrow")
}
