// Package plugintest is the ABI conformance checker behind `voxhost plugin
// test`: it drives a module through the whole lifecycle the way a host
// does — with and without config, start and end events, silence, full
// scale, the shortest and longest frames, a rate declaration, DTMF, clear
// and flush — then soaks it in minutes of mixed audio in fast-forward
// (soak.go), and reports every check with the reason it failed and the
// plugin's own log lines beside it.
//
// The JSON form of a Report (`voxhost plugin test --json`) is a stable
// schema, versioned by Report.Schema: within a version members are only
// added, never renamed, retyped or given another meaning.
//
//	{
//	  "schema": 1,
//	  "plugin": "my.wasm",
//	  "passed": false,
//	  "ns_per_frame": 812.5,
//	  "checks": [
//	    {"name": "init with config", "status": "fail",
//	     "detail": "plugin my.wasm: vox_init returned -2 (configuration rejected)",
//	     "logs": [{"level": "error", "msg": "\"threshold_db\" must be a number"}]}
//	  ],
//	  "soaks": [
//	    {"config": "{}", "audio_ms": 180000, "frames": 7702,
//	     "frame_ms_min": 1, "frame_ms_max": 100,
//	     "memory_pages": {"start": 1, "end": 1, "peak": 1, "max": 1},
//	     "emits": 0,
//	     "dropped_emits": {"rate_limited": 0, "bad_name": 0, "oversize_data": 0, "out_of_bounds": 0, "invalid_data": 0},
//	     "fault": "", "fault_at_ms": 0}
//	  ]
//	}
//
// status is pass, warn (a SHOULD of ABI.md missed), fail or skip; logs
// appear on checks that did not pass, at most 20 lines, the last ones;
// passed is false when any check failed. The checks' names are listed in
// the README (Testing a plugin); a soak of a second --config names its
// checks "soak faults (config 2)" and so on.
package plugintest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
)

// Schema is the version of the report's JSON form.
const Schema = 1

// Status is the outcome of one check.
type Status string

// The outcomes. A warning is a SHOULD of ABI.md that the plugin misses.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Check is one line of the report.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Logs are what the plugin logged during the check, and the host's
	// warnings about it (a dropped emit); only for checks that did not
	// pass, at most the last 20 lines.
	Logs []LogLine `json:"logs,omitempty"`
	// LogsOmitted counts earlier lines of the check left out of Logs.
	LogsOmitted int `json:"logs_omitted,omitempty"`
}

// Report is every check, in the order run.
type Report struct {
	// Schema is the version of this JSON form (Schema).
	Schema int     `json:"schema"`
	Plugin string  `json:"plugin"`
	Passed bool    `json:"passed"`
	Checks []Check `json:"checks"`
	// NsPerFrame is the mean time of vox_process on 20 ms of speech.
	NsPerFrame float64 `json:"ns_per_frame"`
	// Soaks has one entry per configuration soaked.
	Soaks []SoakResult `json:"soaks"`
}

func (r *Report) add(c Check) {
	r.Checks = append(r.Checks, c)
	if c.Status == Fail {
		r.Passed = false
	}
}

// Options tune a run.
type Options struct {
	// Config is the plugin's JSON config for the checks that use one; empty
	// means {}.
	Config []byte
	// MoreConfigs are further configurations, each soaked as Config is.
	MoreConfigs [][]byte
	// Soak is how much audio the soak plays per configuration; zero means
	// DefaultSoak, a negative value skips the soak.
	Soak time.Duration
	// MaxFrameMs is the longest frame, as a host's max_frame_ms; the soak
	// plays every length from 1 ms to it. Zero means
	// plugin.DefaultMaxFrameMs.
	MaxFrameMs int
}

const frameSamples = 160

// tester is one run: the report, and what every instance logs to.
type tester struct {
	ctx    context.Context
	rep    *Report
	rt     *plugin.Runtime
	wasm   []byte
	p      *plugin.Plugin
	logs   *capture
	logger *slog.Logger
	maxMs  int
	// maxPages is the most memory an instance may have: its declared
	// maximum, or the host's limit.
	maxPages uint32
}

// checked is an instance with what its checks watch: the emits it made
// and the host dropped.
type checked struct {
	*plugin.Instance
	sink *sink
}

// instantiate makes an instance whose logs and emits the checks see.
func (t *tester) instantiate(cfg []byte) (*checked, error) {
	s := &sink{}
	in, err := t.p.Instantiate(t.ctx, plugin.InstanceConfig{Config: cfg, Logger: t.logger, Sink: s, MaxFrameMs: t.maxMs})
	if err != nil {
		return nil, err
	}
	return &checked{Instance: in, sink: s}, nil
}

// check runs one check. fn returns its outcome; on top of it, an emit the
// host dropped during the check (ABI.md §4) or one of a well-known name
// with the wrong data fails it, and the log lines of a check that did not
// pass go beside it. in may be nil (the check makes its own instances,
// whose set-up is what fails).
func (t *tester) check(name string, in *checked, fn func() (Status, string)) Status {
	mark := t.logs.mark()
	var drops plugin.EmitDrops
	var bad int
	if in != nil {
		drops, bad = in.DroppedEmits(), in.sink.badCount
	}
	st, detail := fn()
	if in != nil {
		if why := emitProblems(in, drops, bad); why != "" {
			st = Fail
			detail = joinDetail(detail, why)
		}
	}
	c := Check{Name: name, Status: st, Detail: detail}
	if st != Pass && st != Skip {
		c.Logs, c.LogsOmitted = t.logs.since(mark)
	}
	t.rep.add(c)
	return st
}

// emitProblems describes what went wrong with in's emits since the counts
// before, or "".
func emitProblems(in *checked, before plugin.EmitDrops, badBefore int) string {
	var parts []string
	now := in.DroppedEmits()
	var delta plugin.EmitDrops
	for r := range now {
		delta[r] = now[r] - before[r]
	}
	if n := delta.Total(); n > 0 {
		msg := fmt.Sprintf("%s dropped: %s", count(int(n), "emit"), delta)
		first := in.FirstDroppedEmits()
		for r := range delta {
			// The first of each reason is what the host logged; later
			// drops of a reason already seen repeat it.
			if delta[r] > 0 && first[r] != "" {
				msg += "; " + plugin.DropReason(r).Text() + ": " + first[r]
			}
		}
		parts = append(parts, msg)
	}
	if n := in.sink.badCount - badBefore; n > 0 {
		parts = append(parts, fmt.Sprintf("%s with the wrong data: %s", count(n, "emit"), strings.Join(in.sink.bad, "; ")))
	}
	return strings.Join(parts, "; ")
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Run checks the module. Everything wrong with the plugin is in the report.
func Run(ctx context.Context, rt *plugin.Runtime, name string, wasm []byte, opts Options) *Report {
	rep := &Report{Schema: Schema, Plugin: name, Passed: true, Checks: []Check{}, Soaks: []SoakResult{}}
	insp := rt.Inspect(ctx, name, wasm)
	if !insp.Valid {
		for _, p := range insp.Problems {
			rep.add(Check{Name: "load", Status: Fail, Detail: p})
		}
		return rep
	}
	memory := fmt.Sprintf("memory %d..%d pages", insp.MemoryMinPages, insp.MemoryMaxPages)
	if insp.MemoryMaxPages == 0 {
		memory = fmt.Sprintf("memory %d pages, no maximum", insp.MemoryMinPages)
	}
	rep.add(Check{Name: "load", Status: Pass, Detail: fmt.Sprintf("ABI v%d, %s", insp.ABIVersion, memory)})
	for _, w := range insp.Warnings {
		rep.add(Check{Name: "load", Status: Warn, Detail: w})
	}
	p, err := rt.Load(ctx, name, wasm)
	if err != nil {
		rep.add(Check{Name: "load", Status: Fail, Detail: err.Error()})
		return rep
	}
	defer p.Close(ctx)
	t := &tester{ctx: ctx, rep: rep, rt: rt, wasm: wasm, p: p, logs: &capture{}, maxMs: opts.MaxFrameMs, maxPages: rt.MemoryLimitPages()}
	t.logger = slog.New(t.logs)
	if t.maxMs <= 0 {
		t.maxMs = plugin.DefaultMaxFrameMs
	}
	if insp.MemoryMaxPages > 0 {
		t.maxPages = min(t.maxPages, insp.MemoryMaxPages)
	}
	config := opts.Config
	if len(config) == 0 {
		config = []byte("{}")
	}
	// setUp is a check that an instance can be made with cfg. A plugin may
	// need settings: refusing none with a status code is a warning, as at
	// load, and the checks go on with the --config.
	setUp := func(check string, cfg []byte) {
		t.check(check, nil, func() (Status, string) {
			in, err := t.instantiate(cfg)
			var perr *plugin.Error
			if cfg == nil && len(opts.Config) > 0 && errors.As(err, &perr) && perr.Kind == plugin.KindStatus && perr.Export == abi.ExportInit {
				return Warn, err.Error() + ": calls must configure it"
			}
			if err != nil {
				return Fail, err.Error()
			}
			in.Close(ctx)
			if cfg == nil {
				return Pass, "{} accepted"
			}
			return Pass, fmt.Sprintf("%s accepted", cfg)
		})
	}
	setUp("init without config", nil)
	if len(opts.Config) > 0 {
		setUp("init with config", config)
	} else {
		rep.add(Check{Name: "init with config", Status: Skip, Detail: "no --config given"})
	}
	mark := t.logs.mark()
	in, err := t.instantiate(config)
	if err != nil {
		c := Check{Name: "lifecycle", Status: Fail, Detail: err.Error()}
		c.Logs, c.LogsOmitted = t.logs.since(mark)
		rep.add(c)
		return rep
	}
	defer in.Close(ctx)
	t.lifecycle(in, config)
	t.determinism(config)
	if opts.Soak >= 0 {
		soak := opts.Soak
		if soak == 0 {
			soak = DefaultSoak
		}
		configs := append([][]byte{config}, opts.MoreConfigs...)
		for i, cfg := range configs {
			suffix := ""
			if len(configs) > 1 {
				suffix = fmt.Sprintf(" (config %d)", i+1)
			}
			t.soak(cfg, soak, suffix)
		}
	}
	return rep
}

// lifecycle runs in through the calls of ABI.md §5, one check each.
func (t *tester) lifecycle(in *checked, config []byte) {
	t.check("rate", in, func() (Status, string) {
		return Pass, fmt.Sprintf("%d Hz in, %d Hz out", in.InputRate(), in.OutputRate())
	})
	pagesAfterInit := in.MemoryPages()
	meta := []byte(`{"call_id":"plugin-test","pipeline":"test","protocol":"file","sample_rate":8000,"direction":"inbound","route":"test"}`)
	t.event(in, "call_start event", abi.EventCallStart, 0, meta)

	rate := in.InputRate()
	frames := []struct {
		check   string
		samples []int16
		should  bool // a SHOULD of the ABI: a refusal is a warning
	}{
		{"process silence", make([]int16, frameSamples), false},
		{"process full scale", fullScale(frameSamples), false},
		{"process shortest frame (1 ms)", fullScale(rate / 1000), true},
		{"process longest frame", signal.Samples(signal.Speech(rate, float64(t.maxMs)/1000)), true},
	}
	for _, f := range frames {
		t.check(f.check, in, func() (Status, string) { return process(in, f.samples, f.should) })
	}
	t.event(in, "dtmf event", abi.EventDTMF, '5', nil)
	t.event(in, "clear event", abi.EventClear, 0, nil)
	t.event(in, "unknown event kind", 99, 0, nil)

	speech := signal.Samples(signal.Speech(rate, 1))
	frame := rate / 50
	t.check("process speech", in, func() (Status, string) {
		start := time.Now()
		n := 0
		for off := 0; off+frame <= len(speech); off += frame {
			if st, detail := process(in, speech[off:off+frame], false); st != Pass {
				return st, fmt.Sprintf("frame %d of %d: %s", n+1, len(speech)/frame, detail)
			}
			n++
		}
		t.rep.NsPerFrame = float64(time.Since(start).Nanoseconds()) / float64(n)
		return Pass, fmt.Sprintf("%d frames, %.0f ns/frame", n, t.rep.NsPerFrame)
	})
	t.check("far-end reference", in, func() (Status, string) { return farEnd(in, speech, frame) })
	t.check("memory after init", in, func() (Status, string) {
		if grown := in.MemoryPages(); grown != pagesAfterInit {
			return Fail, fmt.Sprintf("memory grew from %d to %d pages while processing frames: allocate in vox_init, not per frame", pagesAfterInit, grown)
		}
		return Pass, fmt.Sprintf("%s, no growth", pages(pagesAfterInit))
	})
	t.check("flush event", in, func() (Status, string) {
		tail, err := in.Event(abi.EventFlush, 0, nil)
		if err != nil {
			return Fail, err.Error()
		}
		return Pass, fmt.Sprintf("%d tail samples", tail)
	})
	t.event(in, "call_end event", abi.EventCallEnd, 0, nil)
}

// farEnd runs speech through a plugin that asks for the far-end reference
// (ABI §11) with the speech itself as the reference, frame for frame: an
// echo path of gain 1 and no delay. The plugin must take it; what it makes
// of it (an echo canceller takes the speech out) is reported.
func farEnd(in *checked, speech []int16, frame int) (Status, string) {
	if in.Reference() == nil {
		return Skip, "the plugin does not ask for it (no vox_reference)"
	}
	var inEnergy, outEnergy float64
	n := 0
	for off := 0; off+frame <= len(speech); off += frame {
		samples := speech[off : off+frame]
		write(in, samples)
		ref := in.Reference()
		for i, v := range samples {
			ref[2*i], ref[2*i+1] = byte(v), byte(uint16(v)>>8)
		}
		out, err := in.Process(len(samples))
		if err != nil {
			return Fail, fmt.Sprintf("frame %d with its reference: %s", n+1, err)
		}
		buf := in.Buffer()
		for i := range out {
			v := float64(int16(uint16(buf[2*i]) | uint16(buf[2*i+1])<<8))
			outEnergy += v * v
		}
		for _, v := range samples {
			inEnergy += float64(v) * float64(v)
		}
		n++
	}
	return Pass, fmt.Sprintf("%d frames, the far end the frame itself: output %.1f dB against the input", n, 10*math.Log10(max(outEnergy, 1)/max(inEnergy, 1)))
}

func fullScale(n int) []int16 {
	s := make([]int16, n)
	for i := range s {
		if (i/4)%2 == 0 {
			s[i] = 32767
		} else {
			s[i] = -32768
		}
	}
	return s
}

// write puts samples at the start of in's buffer.
func write(in *checked, samples []int16) {
	buf := in.Buffer()
	for i, v := range samples {
		buf[2*i], buf[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
}

// process runs one frame of samples. A refusal of a length the ABI says a
// plugin SHOULD accept is a warning when should is set.
func process(in *checked, samples []int16, should bool) (Status, string) {
	write(in, samples)
	out, err := in.Process(len(samples))
	var perr *plugin.Error
	switch {
	case err == nil:
		return Pass, fmt.Sprintf("%d samples in, %d out", len(samples), out)
	case should && errors.As(err, &perr) && perr.Kind == plugin.KindStatus && perr.Status == abi.StatusBadLength:
		return Warn, fmt.Sprintf("refused %d samples: plugins SHOULD accept any length up to the capacity", len(samples))
	default:
		return Fail, err.Error()
	}
}

func (t *tester) event(in *checked, check string, kind, arg int32, payload []byte) {
	t.check(check, in, func() (Status, string) {
		if _, err := in.Event(kind, arg, payload); err != nil {
			return Fail, err.Error()
		}
		return Pass, ""
	})
}

// determinism runs two fresh instances on the same input and compares.
func (t *tester) determinism(config []byte) {
	t.check("determinism", nil, func() (Status, string) {
		var outs [2][]byte
		for k := range outs {
			in, err := t.instantiate(config)
			if err != nil {
				return Fail, err.Error()
			}
			speech := signal.Samples(signal.Speech(in.InputRate(), 1))
			frame := in.InputRate() / 50
			for off := 0; off+frame <= len(speech); off += frame {
				write(in, speech[off:off+frame])
				n, err := in.Process(frame)
				if err != nil {
					in.Close(t.ctx)
					return Fail, err.Error()
				}
				outs[k] = append(outs[k], in.Buffer()[:2*n]...)
			}
			in.Close(t.ctx)
		}
		if !bytes.Equal(outs[0], outs[1]) {
			return Fail, "two fresh instances gave different output for identical input and state (clock, randomness or uninitialised memory?)"
		}
		return Pass, "identical output from two fresh instances"
	})
}

// WriteText prints the report for a person: a line per check, the log
// lines of a check that did not pass indented under it, then the verdict.
func (r *Report) WriteText(w io.Writer) {
	for _, c := range r.Checks {
		line := fmt.Sprintf("%-5s %s", string(c.Status), c.Name)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(w, line)
		if c.LogsOmitted > 0 {
			fmt.Fprintf(w, "        log: (%d earlier lines)\n", c.LogsOmitted)
		}
		for _, l := range c.Logs {
			fmt.Fprintf(w, "        log %s: %s\n", l.Level, l.Msg)
		}
	}
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%s %s\n", r.Plugin, verdict)
}
