// Tests of the stock dtmf plugin, built at plugins/dtmf/dtmf.wasm (make -C
// plugins/dtmf), run through the real host: host/plugin loads it,
// host/catalog resolves it, host/pipeline feeds it 20 ms frames.
package dtmf_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
)

// wasm is the module under test; go test runs in the package directory.
const wasm = "dtmf.wasm"

const (
	rate      = 8000
	allKeys   = "123A456B789C*0#D"
	frameMs   = 20
	toneAmp   = 0.31622776601683794 // -10 dBFS per tone
	leadSteps = 7                   // alignments of the signal against the 10 ms blocks
)

var (
	catOnce sync.Once
	cat     *catalog.Catalog
	catErr  error
)

// theCatalog loads the plugin once for the whole package (the catalog and
// its runtime are safe for concurrent use; every call gets fresh instances).
func theCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	if _, err := os.Stat(wasm); err != nil {
		t.Fatalf("%v: build it with make -C plugins/dtmf", err)
	}
	catOnce.Do(func() {
		rt, err := plugin.NewRuntime(context.Background(), plugin.Options{CacheDir: "-"})
		if err != nil {
			catErr = err
			return
		}
		cat = catalog.New(rt, "")
	})
	if catErr != nil {
		t.Fatal(catErr)
	}
	return cat
}

// sink records the digits the plugin emits.
type sink struct {
	mu     sync.Mutex
	digits []string
	other  []string
}

func (s *sink) Emit(_, name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var digit string
	if name != "dtmf" || json.Unmarshal(data, &digit) != nil {
		s.other = append(s.other, name+" "+string(data))
		return
	}
	s.digits = append(s.digits, digit)
}

// result is what a run produced: the digits in emit order, the audio out,
// and for each digit the sample offset at which it was emitted.
type result struct {
	digits string
	out    []byte
	at     []int
}

// detect runs pcm at inRate through "dtmf.wasm <config>", frameSamples at a
// time (the last frame may be shorter).
func detect(t testing.TB, config string, inRate int, pcm []byte, frameSamples int) result {
	t.Helper()
	specs, err := pipeline.ParseSpec(wasm + " " + config)
	if err != nil {
		t.Fatal(err)
	}
	def, err := theCatalog(t).Definition(context.Background(), "test", specs)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sink{}
	p, err := def.Instantiate(context.Background(), pipeline.CallConfig{InputRate: inRate, Sink: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	var res result
	src := &pipeline.PCM{}
	frameBytes := 2 * frameSamples
	for off := 0; off < len(pcm); off += frameBytes {
		src.Frame = pcm[off:min(off+frameBytes, len(pcm))]
		view, err := p.Process(src)
		if err != nil {
			t.Fatal(err)
		}
		res.out = append(res.out, view...)
		for len(res.at) < len(rec.digits) {
			res.at = append(res.at, off/2+len(src.Frame)/2)
		}
	}
	if err := p.Flush(func(pcm []byte) error { res.out = append(res.out, pcm...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rec.other) > 0 {
		t.Fatalf("unexpected events: %v", rec.other)
	}
	res.digits = strings.Join(rec.digits, "")
	return res
}

// keys8k runs 8 kHz audio in 20 ms frames with the given config and returns the digits.
func keys8k(t testing.TB, config string, pcm []byte) string {
	t.Helper()
	return detect(t, config, rate, pcm, rate*frameMs/1000).digits
}

// tones describes a key sequence as signal.DTMF makes it.
type tones struct {
	keys          string
	toneMs, gapMs int
	amp           float64 // per tone, of full scale
	twistDB       float64 // high group louder by this much
	deviation     float64 // both frequencies scaled by 1+deviation
	lead          int     // samples of silence first
}

// q23 is the 16 keys at the Q.23 minimum timing: 40 ms tone, 40 ms gap.
func q23() tones { return tones{keys: allKeys, toneMs: 40, gapMs: 40, amp: toneAmp} }

func (s tones) pcm(r int) []byte {
	parts := [][]byte{make([]byte, 2*s.lead)}
	for i := 0; i < len(s.keys); i++ {
		parts = append(parts, signal.DTMF(r, s.keys[i], s.toneMs, s.amp, s.twistDB, s.deviation), signal.Silence(r, s.gapMs))
	}
	return signal.Concat(parts...)
}

// leads are sample offsets that put the tones at every position against the
// 10 ms blocks (80 samples at 8 kHz).
func leads(r int) []int {
	var out []int
	block := r / 100
	for i := 0; i < leadSteps; i++ {
		out = append(out, i*block/leadSteps+i) // 0, 12, 24, ... plus a drift off any grid
	}
	return out
}

// power is the mean square of the dual tone, 0..1 of full scale squared.
func (s tones) power() float64 { return s.amp * s.amp / 2 * (1 + math.Pow(10, s.twistDB/10)) }

// noisy adds white noise snrDB below the tones' power (in the tones, not
// averaged over the gaps).
func (s tones) noisy(pcm []byte, snrDB float64, seed uint64) []byte {
	rms := math.Sqrt(s.power()) * math.Pow(10, -snrDB/20)
	return signal.Mix(pcm, signal.Noise(rate, float64(len(pcm)/2)/rate, rms, seed))
}

func ulawRoundTrip(pcm []byte) []byte {
	u := make([]byte, len(pcm)/2)
	codec.EncodeUlaw(u, pcm)
	out := make([]byte, len(pcm))
	codec.DecodeUlaw(out, u)
	return out
}

// TestQ23AllKeys: the 16 keys at 40 ms on / 40 ms off, at -10 dBFS per tone,
// every alignment, found exactly in order; also with +-1.5% frequency
// deviation, +6 dB and -4 dB twist, after G.711 mu-law, and in 15 dB noise.
func TestQ23AllKeys(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*tones)
		post func(tones, []byte) []byte
	}{
		{name: "nominal"},
		{name: "deviation+1.5%", mod: func(s *tones) { s.deviation = 0.015 }},
		{name: "deviation-1.5%", mod: func(s *tones) { s.deviation = -0.015 }},
		{name: "twist+6dB", mod: func(s *tones) { s.twistDB = 6 }},
		{name: "twist-4dB", mod: func(s *tones) { s.twistDB = -4 }},
		{name: "ulaw", post: func(_ tones, p []byte) []byte { return ulawRoundTrip(p) }},
		{name: "ulaw+deviation+1.5%+twist+6dB", mod: func(s *tones) { s.deviation, s.twistDB = 0.015, 6 }, post: func(_ tones, p []byte) []byte { return ulawRoundTrip(p) }},
		{name: "noise15dB", post: func(s tones, p []byte) []byte { return s.noisy(p, 15, 1) }},
		{name: "noise15dB-seed2", post: func(s tones, p []byte) []byte { return s.noisy(p, 15, 2) }},
		{name: "noise15dB+ulaw", post: func(s tones, p []byte) []byte { return ulawRoundTrip(s.noisy(p, 15, 3)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, lead := range leads(rate) {
				s := q23()
				s.lead = lead
				if c.mod != nil {
					c.mod(&s)
				}
				pcm := s.pcm(rate)
				if c.post != nil {
					pcm = c.post(s, pcm)
				}
				if got := keys8k(t, "", pcm); got != allKeys {
					t.Errorf("lead %d samples: got %q, want %q", lead, got, allKeys)
				}
			}
		})
	}
}

// TestOnsetLatency: a key is reported at its onset: within 40 ms of the
// tone's start, once, however long the tone lasts.
func TestOnsetLatency(t *testing.T) {
	for _, lead := range leads(rate) {
		s := tones{keys: "5", toneMs: 500, gapMs: 100, amp: toneAmp, lead: lead + 800}
		// 1 ms frames: the emit time is known to the millisecond.
		res := detect(t, "", rate, s.pcm(rate), 8)
		if res.digits != "5" {
			t.Fatalf("lead %d: a 500 ms tone gave %q, want one 5", lead, res.digits)
		}
		if d := res.at[0] - s.lead; d < 26*8 || d > 40*8 {
			t.Errorf("lead %d: reported %.1f ms after the tone began, want 26..40 ms", lead, float64(d)/8)
		}
	}
}

// TestNoFalseDigits: speech, noise, silence and single tones name no key.
func TestNoFalseDigits(t *testing.T) {
	cases := map[string][]byte{
		"speech 5 s":       signal.Speech(rate, 5),
		"speech 5 s, ulaw": ulawRoundTrip(signal.Speech(rate, 5)),
		"silence 1 s":      signal.Silence(rate, 1000),
		"noise -10 dBFS":   signal.Noise(rate, 2, 0.3, 7),
		"noise -30 dBFS":   signal.Noise(rate, 2, 0.03, 8),
		"1 kHz":            signal.Tone(rate, 1000, 0.5, 1),
		"1 kHz -10 dBFS":   signal.Tone(rate, 1000, toneAmp, 1),
	}
	for _, f := range []float64{697, 770, 852, 941, 1209, 1336, 1477, 1633} {
		cases[fmt.Sprintf("%g Hz", f)] = signal.Tone(rate, f, toneAmp, 1)
		cases[fmt.Sprintf("%g Hz loud", f)] = signal.Tone(rate, f, 0.9, 1)
	}
	for name, pcm := range cases {
		if got := keys8k(t, "", pcm); got != "" {
			t.Errorf("%s: got digits %q, want none", name, got)
		}
		if got := detect(t, "mute=true", rate, pcm, 160).out; string(got) != string(pcm) {
			t.Errorf("%s: mute=true changed audio in which there is no key", name)
		}
	}
}

// TestDuration: a 25 ms tone is too short at every alignment; two 40 ms
// presses of the same key 40 ms apart are two keys.
func TestDuration(t *testing.T) {
	for _, lead := range leads(rate) {
		for _, key := range []string{"1", "5", "D", "#"} {
			short := tones{keys: key, toneMs: 25, gapMs: 100, amp: toneAmp, lead: lead}
			if got := keys8k(t, "", short.pcm(rate)); got != "" {
				t.Errorf("lead %d: a 25 ms %s gave %q, want nothing", lead, key, got)
			}
			twice := tones{keys: key + key, toneMs: 40, gapMs: 40, amp: toneAmp, lead: lead}
			if got := keys8k(t, "", twice.pcm(rate)); got != key+key {
				t.Errorf("lead %d: two 40 ms %s 40 ms apart gave %q", lead, key, got)
			}
		}
	}
	// A long press is one key, and a 10 ms drop-out inside it does not
	// make it two.
	long := signal.Concat(signal.DTMF(rate, '7', 300, toneAmp, 0, 0), signal.Silence(rate, 10),
		signal.DTMF(rate, '7', 300, toneAmp, 0, 0), signal.Silence(rate, 100))
	if got := keys8k(t, "", long); got != "7" {
		t.Errorf("300 ms + 10 ms break + 300 ms of 7 gave %q, want one 7", got)
	}
	// Keys that follow one another without a gap are each reported.
	if got := keys8k(t, "", tones{keys: "1212", toneMs: 60, amp: toneAmp}.pcm(rate)); got != "1212" {
		t.Errorf("1212 without gaps gave %q", got)
	}
}

// TestMute: with mute=true the tone is silenced from its detection to its
// end, the keys are still reported and the rest of the audio is untouched;
// with mute=false the output is the input, bit for bit.
func TestMute(t *testing.T) {
	const toneMs, gapMs = 120, 120
	speech := signal.Speech(rate, 0.2)
	for _, lead := range leads(rate) {
		s := tones{keys: "159D", toneMs: toneMs, gapMs: gapMs, amp: toneAmp, lead: lead}
		// Speech after the keys must come out untouched.
		pcm := signal.Concat(s.pcm(rate), speech)
		res := detect(t, "mute=true", rate, pcm, 160)
		if res.digits != s.keys {
			t.Fatalf("lead %d: mute=true gave %q, want %q", lead, res.digits, s.keys)
		}
		in, out := signal.Samples(pcm), signal.Samples(res.out)
		if len(out) != len(in) {
			t.Fatalf("%d samples out, want %d", len(out), len(in))
		}
		var toneIn, toneOut float64
		for k := range s.keys {
			on := lead + k*(toneMs+gapMs)*8
			off := on + toneMs*8
			for i := on; i < off; i++ {
				toneIn += float64(in[i]) * float64(in[i])
				toneOut += float64(out[i]) * float64(out[i])
				if i >= on+40*8 && out[i] != 0 {
					t.Fatalf("lead %d key %c: sample %d ms into the tone = %d, want muted", lead, s.keys[k], (i-on)/8, out[i])
				}
			}
			// Released within 30 ms of the tone's end.
			for i := off + 30*8; i < off+gapMs*8; i++ {
				if out[i] != in[i] {
					t.Fatalf("lead %d key %c: the gap is still muted %d ms after the tone", lead, s.keys[k], (i-off)/8)
				}
			}
		}
		frac := toneOut / toneIn
		t.Logf("lead %d: %.0f%% of the energy of %d ms tones passed", lead, 100*frac, toneMs)
		if frac > 40.0/toneMs {
			t.Errorf("lead %d: %.0f%% of the tones' energy passed, want at most the first 40 ms", lead, 100*frac)
		}
		tail := len(in) - len(speech)/2
		if string(res.out[2*tail:]) != string(pcm[2*tail:]) {
			t.Errorf("lead %d: the speech after the keys was changed", lead)
		}
		// mute=false (and no config): bit-identical passthrough.
		for _, cfg := range []string{"", "mute=false"} {
			if got := detect(t, cfg, rate, pcm, 160); string(got.out) != string(pcm) || got.digits != s.keys {
				t.Fatalf("lead %d, %q: not a passthrough (digits %q)", lead, cfg, got.digits)
			}
		}
	}
	// In 15 dB noise: no tone leaks after the detection either, and the
	// noise in the gaps passes from 30 ms after each tone on.
	s := tones{keys: allKeys, toneMs: toneMs, gapMs: gapMs, amp: toneAmp}
	pcm := s.noisy(s.pcm(rate), 15, 5)
	res := detect(t, "mute=true", rate, pcm, 160)
	if res.digits != allKeys {
		t.Fatalf("mute=true in noise gave %q", res.digits)
	}
	in, out := signal.Samples(pcm), signal.Samples(res.out)
	for k := range s.keys {
		on := k * (toneMs + gapMs) * 8
		off := on + toneMs*8
		for i := on + 40*8; i < off; i++ {
			if out[i] != 0 {
				t.Fatalf("noise, key %c: %d ms into the tone not muted", s.keys[k], (i-on)/8)
			}
		}
		for i := off + 30*8; i < off+gapMs*8; i++ {
			if out[i] != in[i] {
				t.Fatalf("noise, key %c: the gap is still muted %d ms after the tone", s.keys[k], (i-off)/8)
			}
		}
	}
}

// TestFrameSizeIndependent: the host may deliver any frame length; the
// blocks, the keys and the audio do not depend on it.
func TestFrameSizeIndependent(t *testing.T) {
	s := q23()
	s.toneMs, s.gapMs = 100, 60
	pcm := s.noisy(s.pcm(rate), 20, 9)
	want := detect(t, "mute=true", rate, pcm, 160)
	if want.digits != allKeys {
		t.Fatalf("20 ms frames: %q", want.digits)
	}
	for _, n := range []int{8, 80, 96, 240, 800} {
		got := detect(t, "mute=true", rate, pcm, n)
		if got.digits != want.digits || string(got.out) != string(want.out) {
			t.Errorf("%d-sample frames: digits %q, audio same: %v", n, got.digits, string(got.out) == string(want.out))
		}
	}
}

// TestRates: at 16 kHz (and up to 48 kHz) the blocks are still 10 ms and
// the same keys come out.
func TestRates(t *testing.T) {
	for _, r := range []int{16000, 44100, 48000} {
		for _, lead := range leads(r) {
			s := q23()
			s.lead = lead
			s.deviation = 0.015
			pcm := s.pcm(r)
			res := detect(t, "", r, pcm, r/50)
			if res.digits != allKeys {
				t.Errorf("%d Hz, lead %d: got %q", r, lead, res.digits)
			}
			if string(res.out) != string(pcm) {
				t.Errorf("%d Hz: not a passthrough", r)
			}
		}
		if got := detect(t, "", r, signal.Speech(r, 3), r/50).digits; got != "" {
			t.Errorf("%d Hz speech gave %q", r, got)
		}
		short := tones{keys: "5", toneMs: 25, gapMs: 100, amp: toneAmp, lead: 3 * r / 1000}
		if got := detect(t, "", r, short.pcm(r), r/50).digits; got != "" {
			t.Errorf("%d Hz: a 25 ms tone gave %q", r, got)
		}
	}
}

// TestConfig: the limits are the configured ones, and bad values are refused.
func TestConfig(t *testing.T) {
	q := func(mod func(*tones)) []byte {
		s := q23()
		s.lead = 37
		mod(&s)
		return s.pcm(rate)
	}
	checks := []struct {
		config string
		pcm    []byte
		want   string
	}{
		{"twist_db=4", q(func(s *tones) { s.twistDB = 6 }), ""},
		{"twist_db=8", q(func(s *tones) { s.twistDB = 6 }), allKeys},
		{"reverse_twist_db=2", q(func(s *tones) { s.twistDB = -4 }), ""},
		{"reverse_twist_db=6", q(func(s *tones) { s.twistDB = -5 }), allKeys},
		{"", q(func(s *tones) { s.twistDB = -7 }), ""},
		{"", q(func(s *tones) { s.twistDB = 10 }), ""},
		{"", q(func(s *tones) { s.amp = 0.01 }), ""}, // -40 dBFS
		{"threshold_db=-45", q(func(s *tones) { s.amp = 0.01 }), allKeys},
		{"threshold_db=-5", q(func(s *tones) {}), ""},
		{"min_ms=60", q(func(s *tones) {}), ""},
		{"min_ms=60", q(func(s *tones) { s.toneMs = 60 }), allKeys},
		{"min_ms=20", q(func(s *tones) { s.toneMs = 25 }), allKeys},
	}
	for _, c := range checks {
		if got := keys8k(t, c.config, c.pcm); got != c.want {
			t.Errorf("%q: got %q, want %q", c.config, got, c.want)
		}
	}
	for _, bad := range []string{"mute=1", "min_ms=5", "min_ms=x", "twist_db=-1", "reverse_twist_db=30", "threshold_db=3"} {
		specs, err := pipeline.ParseSpec(wasm + " " + bad)
		if err != nil {
			t.Fatal(err)
		}
		def, err := theCatalog(t).Definition(context.Background(), "test", specs)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := def.Instantiate(context.Background(), pipeline.CallConfig{}); err == nil {
			p.Close(context.Background())
			t.Errorf("%s: accepted", bad)
		}
	}
	for _, badRate := range []int{4000, 96000} {
		specs, _ := pipeline.ParseSpec(wasm)
		def, err := theCatalog(t).Definition(context.Background(), "test", specs)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := def.Instantiate(context.Background(), pipeline.CallConfig{InputRate: badRate}); err == nil {
			p.Close(context.Background())
			t.Errorf("%d Hz: accepted", badRate)
		}
	}
}

// TestMargins measures how far each condition can go before a key of the
// Q.23 sequence is lost (the figures in README.md); go test -v -run Margins.
func TestMargins(t *testing.T) {
	all := func(mod func(*tones), post func(tones, []byte) []byte) bool {
		for _, lead := range leads(rate) {
			s := q23()
			s.lead = lead
			mod(&s)
			pcm := s.pcm(rate)
			if post != nil {
				pcm = post(s, pcm)
			}
			if keys8k(t, "", pcm) != allKeys {
				return false
			}
		}
		return true
	}
	// Each sweep walks outwards from a point that must pass.
	sweep := func(from, step float64, ok func(float64) bool) float64 {
		last := math.NaN()
		for x := from; math.Abs(x-from) < 100*math.Abs(step); x += step {
			if !ok(x) {
				break
			}
			last = x
		}
		return last
	}
	devUp := sweep(0, 0.001, func(x float64) bool { return all(func(s *tones) { s.deviation = x }, nil) })
	devDown := sweep(0, -0.001, func(x float64) bool { return all(func(s *tones) { s.deviation = x }, nil) })
	twUp := sweep(0, 0.25, func(x float64) bool { return all(func(s *tones) { s.twistDB = x }, nil) })
	twDown := sweep(0, -0.25, func(x float64) bool { return all(func(s *tones) { s.twistDB = x }, nil) })
	snr := sweep(30, -1, func(x float64) bool {
		return all(func(*tones) {}, func(s tones, p []byte) []byte { return s.noisy(p, x, uint64(100*x)) })
	})
	level := sweep(-10, -1, func(x float64) bool {
		return all(func(s *tones) { s.amp = math.Pow(10, x/20) }, nil)
	})
	durShortest := sweep(40, -1, func(x float64) bool { return all(func(s *tones) { s.toneMs = int(x) }, nil) })
	// The other side: the longest tone no alignment detects, and how many
	// keys survive a deviation Q.24 says must be rejected (3.5%).
	count := func(mod func(*tones)) int {
		n := 0
		for _, lead := range leads(rate) {
			s := q23()
			s.lead = lead
			mod(&s)
			n += len(keys8k(t, "", s.pcm(rate)))
		}
		return n
	}
	durLongest := sweep(20, 1, func(x float64) bool { return count(func(s *tones) { s.toneMs = int(x) }) == 0 })
	dev35 := count(func(s *tones) { s.deviation = 0.035 }) + count(func(s *tones) { s.deviation = -0.035 })
	dev25 := count(func(s *tones) { s.deviation = 0.025 }) + count(func(s *tones) { s.deviation = -0.025 })
	t.Logf("rejected: tones up to %g ms at every alignment; at +-2.5%% deviation %d of %d keys found, at +-3.5%% %d",
		durLongest, dev25, 2*16*len(leads(rate)), dev35)
	t.Logf("all 16 keys at %d alignments: deviation %+.1f%% .. %+.1f%%, twist %+.2f .. %+.2f dB, SNR down to %g dB, level down to %g dBFS, tones down to %g ms",
		len(leads(rate)), 100*devDown, 100*devUp, twDown, twUp, snr, level, durShortest)
	if devUp < 0.015 || devDown > -0.015 || twUp < 6 || twDown > -4 || snr > 15 {
		t.Errorf("the margins do not cover the Q.24 test points")
	}
}
