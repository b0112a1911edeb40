// Package plugintest is the ABI conformance checker behind `voxhost plugin
// test`: it drives a module through the whole lifecycle the way a host
// does — with and without config, start and end events, silence, full
// scale, the shortest and longest frames, a rate declaration, DTMF, clear
// and flush — and reports every check with the reason it failed.
package plugintest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/signal"
)

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
}

// Report is every check, in the order run.
type Report struct {
	Plugin string  `json:"plugin"`
	Checks []Check `json:"checks"`
	// NsPerFrame is the mean time of vox_process on 20 ms of speech.
	NsPerFrame float64 `json:"ns_per_frame"`
	// Passed is false when any check failed.
	Passed bool `json:"passed"`
}

func (r *Report) add(name string, st Status, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Status: st, Detail: fmt.Sprintf(format, args...)})
	if st == Fail {
		r.Passed = false
	}
}

// Options tune a run.
type Options struct {
	// Config is the plugin's JSON config for the checks that use one; empty
	// means {}.
	Config []byte
}

const frameSamples = 160

// Run checks the module. The error is for problems of the checker itself;
// everything wrong with the plugin is in the report.
func Run(ctx context.Context, rt *plugin.Runtime, name string, wasm []byte, opts Options) *Report {
	rep := &Report{Plugin: name, Passed: true}
	insp := rt.Inspect(ctx, name, wasm)
	if !insp.Valid {
		for _, p := range insp.Problems {
			rep.add("load", Fail, "%s", p)
		}
		return rep
	}
	rep.add("load", Pass, "ABI v%d, memory %d..%d pages", insp.ABIVersion, insp.MemoryMinPages, insp.MemoryMaxPages)
	for _, w := range insp.Warnings {
		rep.add("load", Warn, "%s", w)
	}
	p, err := rt.Load(ctx, name, wasm)
	if err != nil {
		rep.add("load", Fail, "%v", err)
		return rep
	}
	defer p.Close(ctx)
	config := opts.Config
	if len(config) == 0 {
		config = []byte("{}")
	}
	newInstance := func(check string, cfg []byte) *plugin.Instance {
		in, err := p.Instantiate(ctx, plugin.InstanceConfig{Config: cfg, Logger: quiet})
		if err != nil {
			rep.add(check, Fail, "%v", err)
			return nil
		}
		return in
	}

	if in := newInstance("init without config", nil); in != nil {
		rep.add("init without config", Pass, "{} accepted")
		in.Close(ctx)
	}
	if len(opts.Config) > 0 {
		if in := newInstance("init with config", config); in != nil {
			rep.add("init with config", Pass, "%s accepted", config)
			in.Close(ctx)
		}
	} else {
		rep.add("init with config", Skip, "no --config given")
	}
	in := newInstance("lifecycle", config)
	if in == nil {
		return rep
	}
	defer in.Close(ctx)
	rep.add("rate", Pass, "%d Hz in, %d Hz out", in.InputRate(), in.OutputRate())
	pagesAfterInit := in.MemoryPages()

	meta := []byte(`{"call_id":"plugin-test","pipeline":"test","protocol":"file","sample_rate":8000}`)
	event(rep, in, "call_start event", abi.EventCallStart, 0, meta)

	frames := []struct {
		check   string
		samples []int16
		should  bool // a SHOULD of the ABI: a refusal is a warning
	}{
		{"process silence", make([]int16, frameSamples), false},
		{"process full scale", fullScale(frameSamples), false},
		{"process shortest frame (1 ms)", fullScale(in.InputRate() / 1000), true},
		{"process longest frame", signal.Samples(signal.Speech(in.InputRate(), plugin.DefaultMaxFrameMs/1000.0)), true},
	}
	for _, f := range frames {
		process(rep, in, f.check, f.samples, f.should)
	}
	event(rep, in, "dtmf event", abi.EventDTMF, '5', nil)
	event(rep, in, "clear event", abi.EventClear, 0, nil)
	event(rep, in, "unknown event kind", 99, 0, nil)

	speech := signal.Samples(signal.Speech(in.InputRate(), 1))
	frame := in.InputRate() / 50
	start := time.Now()
	n := 0
	for off := 0; off+frame <= len(speech); off += frame {
		if !process(nil, in, "", speech[off:off+frame], false) {
			rep.add("process speech", Fail, "failed at frame %d", in.Frames())
			break
		}
		n++
	}
	if n > 0 {
		rep.NsPerFrame = float64(time.Since(start).Nanoseconds()) / float64(n)
		rep.add("process speech", Pass, "%d frames, %.0f ns/frame", n, rep.NsPerFrame)
	}
	if grown := in.MemoryPages(); grown != pagesAfterInit {
		rep.add("memory after init", Fail, "memory grew from %d to %d pages while processing frames: allocate in vox_init, not per frame", pagesAfterInit, grown)
	} else {
		rep.add("memory after init", Pass, "%d pages, no growth", grown)
	}
	if tail, err := in.Event(abi.EventFlush, 0, nil); err != nil {
		rep.add("flush event", Fail, "%v", err)
	} else {
		rep.add("flush event", Pass, "%d tail samples", tail)
	}
	event(rep, in, "call_end event", abi.EventCallEnd, 0, nil)
	determinism(ctx, rep, p, config, speech, frame)
	return rep
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

// process writes samples into the buffer and runs one frame; with a nil
// report it only says whether the frame passed.
func process(rep *Report, in *plugin.Instance, check string, samples []int16, should bool) bool {
	buf := in.Buffer()
	for i, v := range samples {
		buf[2*i], buf[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	out, err := in.Process(len(samples))
	if rep == nil {
		return err == nil
	}
	var perr *plugin.Error
	switch {
	case err == nil:
		rep.add(check, Pass, "%d samples in, %d out", len(samples), out)
	case should && errors.As(err, &perr) && perr.Kind == plugin.KindStatus && perr.Status == abi.StatusBadLength:
		rep.add(check, Warn, "refused %d samples: plugins SHOULD accept any length up to the capacity", len(samples))
	default:
		rep.add(check, Fail, "%v", err)
	}
	return err == nil
}

func event(rep *Report, in *plugin.Instance, check string, kind, arg int32, payload []byte) {
	if _, err := in.Event(kind, arg, payload); err != nil {
		rep.add(check, Fail, "%v", err)
		return
	}
	rep.add(check, Pass, "")
}

// determinism runs two fresh instances on the same input and compares.
func determinism(ctx context.Context, rep *Report, p *plugin.Plugin, config []byte, speech []int16, frame int) {
	var outs [2][]byte
	for k := range outs {
		in, err := p.Instantiate(ctx, plugin.InstanceConfig{Config: config, Logger: quiet})
		if err != nil {
			rep.add("determinism", Fail, "%v", err)
			return
		}
		for off := 0; off+frame <= len(speech); off += frame {
			buf := in.Buffer()
			for i, v := range speech[off : off+frame] {
				buf[2*i], buf[2*i+1] = byte(v), byte(uint16(v)>>8)
			}
			n, err := in.Process(frame)
			if err != nil {
				rep.add("determinism", Fail, "%v", err)
				in.Close(ctx)
				return
			}
			outs[k] = append(outs[k], in.Buffer()[:2*n]...)
		}
		in.Close(ctx)
	}
	if !bytes.Equal(outs[0], outs[1]) {
		rep.add("determinism", Fail, "two fresh instances gave different output for identical input and state (clock, randomness or uninitialised memory?)")
		return
	}
	rep.add("determinism", Pass, "identical output from two fresh instances")
}

// WriteText prints the report for a person.
func (r *Report) WriteText(w io.Writer) {
	for _, c := range r.Checks {
		line := fmt.Sprintf("%-5s %s", string(c.Status), c.Name)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(w, line)
	}
	verdict := "PASSED"
	if !r.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "%s %s\n", r.Plugin, verdict)
}

// quiet swallows the plugin's own log lines during the checks: the report,
// not the log, is the output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
