// The conformance test of the "every SDK feature" example, the clipper
// (examples/CLIPPER.md): every language's build, through the real host,
// must produce what an independent Go implementation of the text produces,
// bit for bit, and the same events.
package examples_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
	voxhost "github.com/voxhost/voxhost/sdk/go"
)

// ---- The reference: CLIPPER.md in Go ----

const clipHold = 16

type clipper struct {
	threshold    int32
	soft, report bool
	clipped      int64
	peak         int32
	ring         [clipHold]int16
	pos, held    int
}

func newClipper(thresholdDB float64, soft, report bool) *clipper {
	return &clipper{threshold: int32(math.Floor(32767*math.Pow(10, thresholdDB/20) + 0.5)), soft: soft, report: report}
}

func (c *clipper) process(s []int16) {
	for i := range s {
		a, x := int32(s[i]), int32(s[i])
		if a < 0 {
			a = -a
		}
		c.peak = max(c.peak, a)
		if a > c.threshold {
			c.clipped++
			if c.soft {
				a = c.threshold + (a-c.threshold)>>2
			} else {
				a = c.threshold
			}
			x = a
			if s[i] < 0 {
				x = -a
			}
		}
		s[i], c.ring[c.pos] = c.ring[c.pos], int16(x)
		c.pos = (c.pos + 1) % clipHold
		c.held = min(c.held+1, clipHold)
	}
}

func (c *clipper) stats(key string) emitted {
	data := fmt.Sprintf(`{"key":%s,"clipped":%d,"peak":%d,"peak_dbfs":`, key, c.clipped, c.peak)
	db := 20 * math.Log10(float64(c.peak)/32767)
	return emitted{Name: "clipper.stats", Data: string(voxhost.AppendFixed([]byte(data), db, 2)) + "}"}
}

func (c *clipper) drop() { c.ring, c.pos, c.held = [clipHold]int16{}, 0, 0 }

// event is what the plugin does on an event: the events it emits and the
// samples it releases (on flush).
func (c *clipper) event(kind, arg int32) ([]emitted, []int16) {
	var out []emitted
	switch kind {
	case abi.EventDTMF:
		if c.report {
			out = append(out, c.stats(fmt.Sprintf(`"%c"`, arg)))
		}
		if arg == '*' {
			c.clipped, c.peak = 0, 0
		}
	case abi.EventClear:
		c.drop()
	case abi.EventFlush:
		var tail []int16
		for i := range c.held {
			tail = append(tail, c.ring[(c.pos+clipHold-c.held+i)%clipHold])
		}
		if c.report {
			out = append(out, c.stats("null"))
		}
		c.drop()
		return out, tail
	}
	return out, nil
}

// clipEvent is an event delivered before the frame of index Frame.
type clipEvent struct {
	Frame     int
	Kind, Arg int32
}

// A key before any audio and one right after the reset report a peak of 0:
// peak_dbfs is null.
var clipEvents = []clipEvent{
	{0, abi.EventDTMF, '1'}, {20, abi.EventDTMF, '5'}, {50, abi.EventDTMF, '*'}, {50, abi.EventDTMF, '0'},
	{60, abi.EventCallStart + 98, 7},
	{75, abi.EventClear, 0}, {76, abi.EventDTMF, '#'}, {120, abi.EventClear, 0},
}

// clipInput is 1.5 s of speech, then 1 s of a tone at 0.95 of full scale
// and 0.5 s at full scale (-32768 included), so that every mode clips.
func clipInput() []int16 {
	in := signal.Samples(signal.Speech(8000, 1.5))
	in = append(in, signal.Samples(signal.Tone(8000, 440, 0.95, 1))...)
	for i := range 4000 {
		in = append(in, []int16{32767, -32768, 12000, -12000}[i%4])
	}
	return in
}

func clipReference(cfg clipConfig, input []int16, lengths []int) ([]int16, []emitted) {
	c := newClipper(cfg.thresholdDB, cfg.soft, cfg.report)
	var out []int16
	var events []emitted
	for frame, off := 0, 0; off < len(input); frame++ {
		for _, e := range clipEvents {
			if e.Frame == frame {
				ev, _ := c.event(e.Kind, e.Arg)
				events = append(events, ev...)
			}
		}
		end := min(off+lengths[frame%len(lengths)], len(input))
		s := append([]int16(nil), input[off:end]...)
		c.process(s)
		out = append(out, s...)
		off = end
	}
	ev, tail := c.event(abi.EventFlush, 0)
	return append(out, tail...), append(events, ev...)
}

// runClip feeds input through the call in frames of the given lengths
// (cycled) with clipEvents, then flushes.
func (c *call) runClip(tb testing.TB, input []int16, lengths []int) []int16 {
	tb.Helper()
	return c.feed(tb, input, lengths, func(frame int) {
		for _, e := range clipEvents {
			if e.Frame == frame {
				if err := c.p.Event(e.Kind, e.Arg, nil); err != nil {
					tb.Fatalf("event %d before frame %d: %v", e.Kind, frame, err)
				}
			}
		}
	})
}

type clipConfig struct {
	name, json   string
	thresholdDB  float64
	soft, report bool
}

// clipConfigs are the configurations every language runs with; their
// thresholds keep 32767 * 10^(dB/20) well away from a rounding tie.
var clipConfigs = []clipConfig{
	{name: "defaults", json: `{}`, thresholdDB: -6, report: true},
	{name: "soft_-12", json: `{"threshold_db":-12,"mode":"soft","report":true}`, thresholdDB: -12, soft: true, report: true},
	{name: "hard_-3_quiet", json: ` { "report" : false , "mode" : "hard", "threshold_db" : -3 } `, thresholdDB: -3},
	{name: "soft_-20.5", json: `{"mode":"soft","threshold_db":-20.5}`, thresholdDB: -20.5, soft: true, report: true},
	{name: "full_scale", json: `{"threshold_db":0}`, thresholdDB: 0, report: true},
}

// TestClipperThresholdsClearOfTies checks the test's own thresholds: an
// SDK's dB helper may differ from math.Pow by 1e-7, so none may lie that
// close to a rounding tie.
func TestClipperThresholdsClearOfTies(t *testing.T) {
	for _, c := range clipConfigs {
		x := 32767 * math.Pow(10, c.thresholdDB/20)
		if f := x - math.Floor(x); math.Abs(f-0.5) < 1e-3 {
			t.Errorf("%s: 32767 * gain = %v, too close to a tie", c.name, x)
		}
	}
}

// TestClipperConformance runs every language's clipper through the host and
// compares it with the reference, bit for bit, events included.
func TestClipperConformance(t *testing.T) {
	input := clipInput()
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			path := examplePath(t, lang, "clipper")
			for _, cfg := range clipConfigs {
				for _, lengths := range [][]int{{frameSamples}, {8, 160, 800, 24, 320, 40}} {
					t.Run(fmt.Sprintf("%s/frames_%d", cfg.name, lengths[0]), func(t *testing.T) {
						c, err := startCall(t, definitionAt(t, "clipper-"+lang, path, nil, cfg.json), 8000, nil)
						if err != nil {
							t.Fatal(err)
						}
						got := c.runClip(t, input, lengths)
						want, wantEvents := clipReference(cfg, input, lengths)
						compare(t, got, want, c.events.events, wantEvents)
					})
				}
			}
		})
	}
}

// TestClipperBadConfig: an unknown key, a wrong type, a number out of range
// or another mode fails set-up with -2 after one line at error level; an
// unknown key's line names it.
func TestClipperBadConfig(t *testing.T) {
	bad := map[string]string{
		`{"threshold":-6}`:         `clipper: unknown config key "threshold"`,
		`{"report":true,"Mode":1}`: `clipper: unknown config key "Mode"`,
		`{"threshold_db":"-6"}`:    "",
		`{"threshold_db":1}`:       "",
		`{"threshold_db":-61}`:     "",
		`{"mode":"medium"}`:        "",
		`{"mode":true}`:            "",
		`{"report":"yes"}`:         "",
		`{"report":1}`:             "",
	}
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			path := examplePath(t, lang, "clipper")
			for cfg, line := range bad {
				logs := &logRecorder{}
				_, err := startCall(t, definitionAt(t, "clipper-"+lang, path, nil, cfg), 8000, slog.New(logs))
				var perr *plugin.Error
				if !errors.As(err, &perr) || perr.Export != abi.ExportInit || perr.Status != abi.StatusBadConfig {
					t.Errorf("config %s: %v, want vox_init to fail with status -2", cfg, err)
					continue
				}
				var lines []string
				for _, r := range logs.lines {
					if r.Level == slog.LevelError {
						lines = append(lines, r.Message)
					}
				}
				if len(lines) != 1 || strings.Contains(lines[0], "\n") || (line != "" && lines[0] != line) {
					t.Errorf("config %s: logged %q, want one line at error level%s", cfg, lines, map[bool]string{true: " " + line}[line != ""])
				}
			}
		})
	}
}

// TestCppConstructorRunsOnce: the C++ clipper's global object has a
// constructor that logs. The C SDK's _initialize must run it exactly once
// per instance: not at all, and its threshold would be 0; in every export
// (wasm-ld's way without _initialize), and its state would start over on
// every call.
func TestCppConstructorRunsOnce(t *testing.T) {
	path := examplePath(t, "cpp", "clipper")
	logs := &logRecorder{}
	c, err := startCall(t, definitionAt(t, "clipper-cpp", path, nil, `{"threshold_db":-3}`), 8000, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	c.runClip(t, clipInput()[:1600], []int{frameSamples})
	n := 0
	for _, r := range logs.lines {
		if r.Message == "clipper: constructed" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the constructor ran %d times in one call, want once", n)
	}
}
