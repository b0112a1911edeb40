package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/voxhost/voxhost/abi"
)

// Policy says what happens to a call when one of its stages fails.
type Policy int

const (
	// Bypass skips the failed stage for the rest of the call: its input
	// flows on unchanged, so audio keeps flowing.
	Bypass Policy = iota
	// EndCall makes Process return the error so the caller ends the call.
	EndCall
)

// String names the policy as configs spell it.
func (p Policy) String() string {
	if p == EndCall {
		return "end_call"
	}
	return "bypass"
}

// ParsePolicy reads a policy as configs spell it ("bypass", "end_call").
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "", "bypass":
		return Bypass, nil
	case "end_call":
		return EndCall, nil
	}
	return 0, fmt.Errorf("unknown on_error policy %q (want bypass or end_call)", s)
}

// Fault reports a stage that failed.
type Fault struct {
	// Stage is the index of the stage in the chain.
	Stage int
	// Name is the stage's name.
	Name string
	// Err is the stage's error, usually a *plugin.Error.
	Err error
	// Bypassed is true when the call goes on without the stage.
	Bypassed bool
}

// Pipeline is the chain of stages of one call. It is not safe for
// concurrent use: one goroutine runs a call.
type Pipeline struct {
	// What every frame reads comes first, on two cache lines: among
	// hundreds of calls a call's pipeline is cold in the caches at each
	// of its frames (RATIONALE.md, "The host's price per frame").

	// Sampled timing: one frame in sampleEvery is timed stage by stage,
	// so the hop stays clock-free on the others.
	frames      uint64
	sampleEvery uint64
	// sampleNext times the next frame whatever sampleEvery says.
	sampleNext bool
	stages     []Stage
	// bypassed marks the stages that left the chain; referenced those
	// that ask for the far-end reference (Referencer). Both are views of
	// one allocation, so a frame loads one line for both.
	bypassed   []bool
	referenced []bool
	// reference is the next frame's, from SetReference.
	reference []byte
	// scratch carries a frame when no stage after a bypassed one is left.
	scratch []byte

	policies []Policy
	onFault  func(Fault)
	onSample func(stage int, d time.Duration)
	costs    []stageCost
	wantsRef bool
}

// Referencer is a stage that asks for the far-end reference (ABI §11): a
// plugin.Instance of a plugin that exports vox_reference. Reference is its
// buffer, nil if it asks for none.
type Referencer interface {
	Reference() []byte
}

// stageCost accumulates a stage's sampled time; other goroutines read it
// (Costs), so it is atomic.
type stageCost struct{ ns, samples atomic.Int64 }

// StageCost is what the sampled timing says of one stage.
type StageCost struct {
	// Name is the stage's name.
	Name string `json:"plugin"`
	// Samples is how many frames were timed.
	Samples int64 `json:"samples"`
	// MeanNs is the mean time of a timed frame in the stage, in ns.
	MeanNs float64 `json:"mean_ns"`
}

// Sample makes the pipeline time one frame in every (0 stops it), stage
// by stage, and tell onSample (which may be nil) of each stage's time.
// Set it before the first frame.
func (p *Pipeline) Sample(every int, onSample func(stage int, d time.Duration)) {
	p.sampleEvery, p.onSample = uint64(max(every, 0)), onSample
}

// Costs returns each stage's sampled time so far. It is safe to call from
// any goroutine while the pipeline runs.
func (p *Pipeline) Costs() []StageCost {
	out := make([]StageCost, len(p.stages))
	for i, s := range p.stages {
		out[i] = StageCost{Name: s.Name(), Samples: p.costs[i].samples.Load()}
		if out[i].Samples > 0 {
			out[i].MeanNs = float64(p.costs[i].ns.Load()) / float64(out[i].Samples)
		}
	}
	return out
}

// New chains stages whose rates agree. policies gives each stage's policy
// (missing entries mean Bypass); onFault, if not nil, hears of every failure.
func New(stages []Stage, policies []Policy, onFault func(Fault)) (*Pipeline, error) {
	if len(stages) == 0 {
		return nil, errors.New("a pipeline needs at least one stage")
	}
	capacity := 0
	for i, s := range stages {
		if i > 0 && s.InputRate() != stages[i-1].OutputRate() {
			return nil, fmt.Errorf("stage %d (%s) takes %d Hz but stage %d (%s) produces %d Hz",
				i+1, s.Name(), s.InputRate(), i, stages[i-1].Name(), stages[i-1].OutputRate())
		}
		capacity = max(capacity, len(s.Buffer()))
	}
	flags := make([]bool, 2*len(stages))
	referenced := flags[len(stages):]
	wantsRef := false
	for i, s := range stages {
		if r, ok := s.(Referencer); ok && r.Reference() != nil {
			if s.InputRate() != stages[0].InputRate() {
				return nil, fmt.Errorf("stage %d (%s) asks for the far-end reference at %d Hz, but the reference is at %d Hz, the pipeline's input rate: put it before the rate change",
					i+1, s.Name(), s.InputRate(), stages[0].InputRate())
			}
			referenced[i], wantsRef = true, true
		}
	}
	p := &Pipeline{
		stages:   stages,
		policies: make([]Policy, len(stages)),
		bypassed: flags[:len(stages):len(stages)],
		scratch:  make([]byte, capacity),
		onFault:  onFault,
		costs:    make([]stageCost, len(stages)),

		referenced: referenced,
		wantsRef:   wantsRef,
	}
	copy(p.policies, policies)
	return p, nil
}

// Stages returns the chain, in order.
func (p *Pipeline) Stages() []Stage { return p.stages }

// InputRate is the rate the first stage takes, in Hz.
func (p *Pipeline) InputRate() int { return p.stages[0].InputRate() }

// OutputRate is the rate the last stage produces, in Hz.
func (p *Pipeline) OutputRate() int { return p.stages[len(p.stages)-1].OutputRate() }

// Bypassed reports whether stage i has failed and left the chain.
func (p *Pipeline) Bypassed(i int) bool { return p.bypassed[i] }

// Process runs one frame: src fills the first active stage's buffer, each
// stage processes in place, and one copy carries the output into the next.
// The result is a view of the last stage's buffer, valid until the next call;
// it is empty when a stage swallowed the frame. An error means a stage with
// the EndCall policy failed.
func (p *Pipeline) Process(src Filler) ([]byte, error) {
	p.frames++
	timed := p.sampleEvery != 0 && p.frames%p.sampleEvery == 0 || p.sampleNext
	p.sampleNext = false
	first := p.nextActive(0)
	n := src.Fill(p.bufferOf(first))
	out, err := p.run(first, n, nil, src, timed)
	p.reference = nil
	return out, err
}

// WantsReference says whether a stage asks for the far-end reference: the
// caller of Process should then give each frame's with SetReference.
func (p *Pipeline) WantsReference() bool { return p.wantsRef }

// SetReference gives the far-end reference of the frame the next Process
// takes: PCM16LE at the pipeline's input rate, as many samples as that
// frame (ABI §11). Without it, or with nil, the reference is silence. The
// pipeline reads pcm during that Process only.
func (p *Pipeline) SetReference(pcm []byte) { p.reference = pcm }

// fillReference writes the reference of a stage's frame of n bytes into
// its reference buffer: the last n bytes of the pipeline frame's reference,
// after silence where that is shorter.
func (p *Pipeline) fillReference(s Stage, n int) {
	dst := s.(Referencer).Reference()
	n = min(n, len(dst))
	ref := p.reference
	if len(ref) > n {
		ref = ref[len(ref)-n:]
	}
	pad := n - len(ref)
	clear(dst[:pad])
	copy(dst[pad:n], ref)
}

// run carries n bytes that sit in stage i's buffer through stages i onward.
// from is the buffer the input was copied out of (nil: it came from src),
// kept so that a stage that fails mid-frame can be bypassed without losing
// the frame.
func (p *Pipeline) run(i, n int, from []byte, src Filler, timed bool) ([]byte, error) {
	for i < len(p.stages) {
		s := p.stages[i]
		var t0 time.Time
		if timed {
			t0 = time.Now()
		}
		if p.referenced[i] {
			p.fillReference(s, n)
		}
		out, err := s.Process(n / abi.SampleBytes)
		if timed {
			p.timed(i, time.Since(t0))
		}
		if err == nil && out*abi.SampleBytes > len(s.Buffer()) {
			err = fmt.Errorf("stage %s returned %d samples, more than its buffer holds", s.Name(), out)
		}
		next := p.nextActive(i + 1)
		if err == nil && next < len(p.stages) && out*abi.SampleBytes > len(p.stages[next].Buffer()) {
			err = fmt.Errorf("stage %s returned %d samples, more than the next stage's buffer holds", s.Name(), out)
		}
		if err != nil {
			if ferr := p.fault(i, err); ferr != nil {
				return nil, ferr
			}
			next = p.nextActive(i + 1)
			dst := p.bufferOf(next)
			if from == nil {
				n = src.Fill(dst)
			} else {
				n = copy(dst, from)
			}
			i = next
			continue
		}
		if out == 0 {
			return s.Buffer()[:0], nil
		}
		n = out * abi.SampleBytes
		view := s.Buffer()[:n]
		if next == len(p.stages) {
			return view, nil
		}
		copy(p.stages[next].Buffer(), view)
		from, i = view, next
	}
	return p.scratch[:n], nil
}

// timed records a sampled stage time.
func (p *Pipeline) timed(i int, d time.Duration) {
	p.costs[i].ns.Add(int64(d))
	p.costs[i].samples.Add(1)
	if p.onSample != nil {
		p.onSample(i, d)
	}
}

// fault takes stage i out of the chain, or returns the error that ends the
// call: under EndCall, and for a stage that changes the sample rate, since
// the stages after it could not take its input.
func (p *Pipeline) fault(i int, err error) error {
	s := p.stages[i]
	bypass := p.policies[i] == Bypass && s.InputRate() == s.OutputRate()
	// A failed stage gets no more calls, whether the call goes on or not.
	p.bypassed[i] = true
	if p.onFault != nil {
		p.onFault(Fault{Stage: i, Name: s.Name(), Err: err, Bypassed: bypass})
	}
	if !bypass {
		return err
	}
	// What the stage holds (its memory, and the call stack a deep
	// recursion grew, tens of megabytes) goes now, not when the call ends.
	_ = s.Close(context.Background())
	return nil
}

// Costliest is the active stage that can be bypassed (it keeps the sample
// rate) whose sampled frames took longest on average, and that mean; ok is
// false when no such stage has been timed yet. The next frame is then
// timed whatever the sampling says, so that asking again after it answers.
func (p *Pipeline) Costliest() (stage int, meanNs float64, ok bool) {
	for i, s := range p.stages {
		if p.bypassed[i] || s.InputRate() != s.OutputRate() {
			continue
		}
		n := p.costs[i].samples.Load()
		if n == 0 {
			continue
		}
		if mean := float64(p.costs[i].ns.Load()) / float64(n); !ok || mean > meanNs {
			stage, meanNs, ok = i, mean, true
		}
	}
	if !ok {
		p.sampleNext = true
	}
	return stage, meanNs, ok
}

// Bypass takes stage i out of the chain for the rest of the call, whatever
// its on_error policy, as a failure would under Bypass: onFault hears of it
// with why. The stage must keep the sample rate (Costliest picks only such).
func (p *Pipeline) Bypass(i int, why error) {
	p.bypassed[i] = true
	if p.onFault != nil {
		p.onFault(Fault{Stage: i, Name: p.stages[i].Name(), Err: why, Bypassed: true})
	}
	_ = p.stages[i].Close(context.Background())
}

func (p *Pipeline) nextActive(i int) int {
	for i < len(p.stages) && p.bypassed[i] {
		i++
	}
	return i
}

func (p *Pipeline) bufferOf(i int) []byte {
	if i == len(p.stages) {
		return p.scratch
	}
	return p.stages[i].Buffer()
}

// Event delivers an ABI event to every active stage, in order. A stage that
// fails is handled by its policy.
func (p *Pipeline) Event(kind, arg int32, payload []byte) error {
	for i, s := range p.stages {
		if p.bypassed[i] {
			continue
		}
		if _, err := s.Event(kind, arg, payload); err != nil {
			if ferr := p.fault(i, err); ferr != nil {
				return ferr
			}
		}
	}
	return nil
}

// Flush tells each stage in turn that the input ended; the samples a stage
// releases run through the stages after it and reach out, which must not
// keep the slice.
func (p *Pipeline) Flush(out func(pcm []byte) error) error {
	for i, s := range p.stages {
		if p.bypassed[i] {
			continue
		}
		samples, err := s.Event(abi.EventFlush, 0, nil)
		if err != nil {
			if ferr := p.fault(i, err); ferr != nil {
				return ferr
			}
			continue
		}
		if samples == 0 {
			continue
		}
		if samples*abi.SampleBytes > len(s.Buffer()) {
			if ferr := p.fault(i, fmt.Errorf("stage %s flushed %d samples, more than its buffer holds", s.Name(), samples)); ferr != nil {
				return ferr
			}
			continue
		}
		tail := s.Buffer()[:samples*abi.SampleBytes]
		next := p.nextActive(i + 1)
		if next == len(p.stages) {
			if err := out(tail); err != nil {
				return err
			}
			continue
		}
		n := copy(p.stages[next].Buffer(), tail)
		pcm, err := p.run(next, n, tail, &PCM{Frame: tail}, false)
		if err != nil {
			return err
		}
		if len(pcm) > 0 {
			if err := out(pcm); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close ends the call for every stage: stages that never failed hear
// call_end first, then all are released.
func (p *Pipeline) Close(ctx context.Context) error {
	var errs []error
	for i, s := range p.stages {
		if !p.bypassed[i] {
			if _, err := s.Event(abi.EventCallEnd, 0, nil); err != nil {
				errs = append(errs, err)
			}
		}
		if err := s.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
