// Package offline runs an audio file through a pipeline exactly as a live
// call would — 20 ms frames, the same events, the same fault handling — and
// writes the result and the plugins' events. It is the plugin author's test
// bench behind `voxhost run`.
package offline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/audiofile"
)

// FrameMs is the frame length of a run, as telephony streams send it.
const FrameMs = 20

// DTMF is a key press to deliver to the plugins at a point of the input.
type DTMF struct {
	AtMs  int
	Digit byte
}

// ParseDTMF reads a list like "500:5,1200:#": milliseconds into the input,
// a colon, and a key (0-9 * # A-D).
func ParseDTMF(s string) ([]DTMF, error) {
	var out []DTMF
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, item := range strings.Split(s, ",") {
		at, digit, ok := strings.Cut(strings.TrimSpace(item), ":")
		ms, err := strconv.Atoi(at)
		if !ok || err != nil || ms < 0 || len(digit) != 1 || !strings.Contains("0123456789*#ABCD", digit) {
			return nil, fmt.Errorf("bad DTMF %q: want MS:KEY, e.g. 500:5, with KEY one of 0-9 * # A-D", item)
		}
		out = append(out, DTMF{AtMs: ms, Digit: digit[0]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AtMs < out[j].AtMs })
	return out, nil
}

// Event is one JSON line of the events output. Its members are those of
// the raw protocol's event messages, "name" and "t_ms" included, so a
// script reads a file run and a live call alike.
type Event struct {
	// TimeMs is when the event happened, as ABI.md §4 defines t_ms: the
	// milliseconds of input audio the pipeline had received, so during a
	// frame the end of that frame, during a DTMF key the audio before it,
	// during the flush and call_end the whole input.
	TimeMs int    `json:"t_ms"`
	Plugin string `json:"plugin"`
	// Name is the name the plugin emitted, or "plugin_error" for a fault.
	// (Before ABI.md defined event names it was written as "kind".)
	Name string          `json:"name"`
	Data json.RawMessage `json:"data,omitempty"`
	// Error and Action describe a fault: the reason and what the host did.
	Error  string `json:"error,omitempty"`
	Action string `json:"action,omitempty"`
}

// Summary tells what a run did.
type Summary struct {
	Frames     int
	InputMs    int
	OutputRate int
	Events     int
	// Faults counts plugin faults, the bypassed ones included.
	Faults int
	// DroppedEmits counts, by reason, the emits the host refused to pass
	// on (ABI.md §4), over every stage.
	DroppedEmits plugin.EmitDrops
	Elapsed      time.Duration
}

// Options describes a run.
type Options struct {
	// Definition is the pipeline to run.
	Definition *pipeline.Definition
	// In and Out are audio files; their extensions choose the format.
	In, Out string
	// Events receives one JSON line per event.
	Events io.Writer
	// DTMF lists key presses to deliver.
	DTMF []DTMF
	// CallID names the run in the call_start metadata.
	CallID string
	// FarEnd, if not empty, is an audio file at In's rate that a plugin
	// asking for the far-end reference (ABI §11) gets frame for frame with
	// In: its sample k is the reference of In's sample k, and silence
	// follows where it is shorter. Empty: the reference is silence.
	FarEnd string
}

// eventLog writes events as JSON lines, stamped with the audio time nowMs.
type eventLog struct {
	mu    sync.Mutex
	enc   *json.Encoder
	nowMs int
	count int
	err   error
}

func (l *eventLog) write(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.TimeMs = l.nowMs
	l.count++
	if l.err == nil {
		l.err = l.enc.Encode(e)
	}
}

// Emit implements plugin.Sink. The host has dropped data that is not one
// JSON value (ABI.md §4), so data goes out as it came.
func (l *eventLog) Emit(plugin, name string, data []byte) {
	l.write(Event{Plugin: plugin, Name: name, Data: data})
}

// at sets the audio time of what is written next.
func (l *eventLog) at(ms int) {
	l.mu.Lock()
	l.nowMs = ms
	l.mu.Unlock()
}

// FaultError is a plugin fault that ended a run: a stage under
// on_error=end_call or one that changes the sample rate failed, or a plugin
// failed its call_end, which has no rest of the call to bypass it for. Run
// has still written the output processed before the fault, as a live call
// would have sent it, so a plugin author can hear what led up to it.
type FaultError struct {
	// At says when: "call_start", "the frame at 80 ms", "the DTMF key 5 at
	// 500 ms", "flush" (the end of the input) or "call_end".
	At string
	// Err is what failed: a *plugin.Error for a plugin, several joined
	// when more than one plugin failed its call_end.
	Err error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("the call ended on a plugin fault at %s: %s", e.At, oneLine(e.Err))
}

// Unwrap returns the plugin's error.
func (e *FaultError) Unwrap() error { return e.Err }

// oneLine is err's message with the errors errors.Join joined on separate
// lines put on one, so the report stays one line.
func oneLine(err error) string {
	var msgs []string
	for _, e := range unjoin(err) {
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "; ")
}

// unjoin lists the errors errors.Join put together, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Run processes the input file and writes the output file. A plugin fault
// that ends the call is returned as a *FaultError after the output is
// written; any other error means no output. Cancelling ctx stops the run
// before the next frame.
func Run(ctx context.Context, opts Options) (Summary, error) {
	var sum Summary
	outFormat, err := audiofile.FormatOf(opts.Out)
	if err != nil {
		return sum, err
	}
	pcm, rate, err := audiofile.ReadPCM(opts.In)
	if err != nil {
		return sum, err
	}
	if err := audiofile.RequireRate(opts.In, rate, abi.TelephonyRate); err != nil {
		return sum, err
	}
	inFormat, _ := audiofile.FormatOf(opts.In)
	var far []byte
	if opts.FarEnd != "" {
		var farRate int
		if far, farRate, err = audiofile.ReadPCM(opts.FarEnd); err != nil {
			return sum, err
		}
		if farRate != rate {
			return sum, fmt.Errorf("%s: the far end is %d Hz but %s is %d Hz: the reference must be at the input's rate", opts.FarEnd, farRate, opts.In, rate)
		}
	}
	events := &eventLog{enc: json.NewEncoder(opts.Events)}
	faults := 0
	p, err := opts.Definition.Instantiate(ctx, pipeline.CallConfig{
		InputRate: rate,
		Sink:      events,
		OnFault: func(f pipeline.Fault) {
			faults++
			action := "bypassed for the rest of the call"
			if !f.Bypassed {
				action = "call ended"
			}
			events.write(Event{Plugin: f.Name, Name: "plugin_error", Error: f.Err.Error(), Action: action})
		},
	})
	if err != nil {
		return sum, err
	}
	if far != nil && !p.WantsReference() {
		p.Close(ctx)
		return sum, fmt.Errorf("--far-end %s: no stage of the pipeline asks for the far-end reference (a plugin that exports vox_reference, such as aec)", opts.FarEnd)
	}
	closed := false
	defer func() {
		if !closed {
			p.Close(ctx)
		}
	}()
	if outFormat == audiofile.FormatUlaw && p.OutputRate() != abi.TelephonyRate {
		return sum, fmt.Errorf("%s: the pipeline produces %d Hz audio but μ-law files are 8000 Hz; write a .wav or end the pipeline at 8000 Hz", opts.Out, p.OutputRate())
	}
	callID := opts.CallID
	if callID == "" {
		callID = "offline"
	}
	meta, _ := json.Marshal(map[string]any{
		"call_id": callID, "pipeline": opts.Definition.Name, "protocol": "file", "sample_rate": rate,
	})
	// ended is the fault that ended the call, if one did. Like a live call,
	// the run then stops sending audio, skips the flush, and still ends the
	// call and keeps what came out before.
	var ended *FaultError
	if err := p.Event(abi.EventCallStart, 0, meta); err != nil {
		ended = &FaultError{At: "call_start", Err: err}
	}

	start := time.Now()
	frameBytes := FrameMs * rate / 1000 * abi.SampleBytes
	// A live call sends μ-law: a .ul input goes through the decoder into the
	// first buffer, a .wav input is copied in as PCM.
	var src pipeline.Filler
	ulawSrc, pcmSrc := &codec.Source{Format: codec.Telephony}, &pipeline.PCM{}
	var ulaw []byte
	if inFormat == audiofile.FormatUlaw {
		ulaw = make([]byte, len(pcm)/2)
		codec.EncodeUlaw(ulaw, pcm)
		src = ulawSrc
	} else {
		src = pcmSrc
	}
	var out []byte
	farFrame := make([]byte, frameBytes+rate/1000*abi.SampleBytes)
	dtmf := opts.DTMF
	for off := 0; ended == nil && off < len(pcm); off += frameBytes {
		nowMs := off / abi.SampleBytes * 1000 / rate
		// A long file must not outlast a SIGINT or SIGTERM.
		if ctx.Err() != nil {
			return sum, fmt.Errorf("%s: interrupted at %d ms: %w", opts.In, nowMs, context.Cause(ctx))
		}
		// A key press comes between frames: it is stamped with the audio
		// before it, the frame with its end (ABI.md §4, t_ms).
		events.at(nowMs)
		for ended == nil && len(dtmf) > 0 && dtmf[0].AtMs < nowMs+FrameMs {
			if err := p.Event(abi.EventDTMF, int32(dtmf[0].Digit), nil); err != nil {
				ended = &FaultError{At: fmt.Sprintf("the DTMF key %c at %d ms", dtmf[0].Digit, dtmf[0].AtMs), Err: err}
			}
			dtmf = dtmf[1:]
		}
		if ended != nil {
			break
		}
		end := min(off+frameBytes, len(pcm))
		// The ABI promises frames in whole milliseconds: pad a short tail.
		step := rate / 1000 * abi.SampleBytes
		if rem := (end - off) % step; rem != 0 {
			padded := make([]byte, end-off+step-rem)
			copy(padded, pcm[off:end])
			pcmSrc.Frame, ulawSrc.Frame = padded, make([]byte, len(padded)/2)
			codec.EncodeUlaw(ulawSrc.Frame, padded)
		} else {
			pcmSrc.Frame = pcm[off:end]
			if ulaw != nil {
				ulawSrc.Frame = ulaw[off/2 : end/2]
			}
		}
		events.at(end / abi.SampleBytes * 1000 / rate)
		if far != nil {
			// Silence follows where far ends, as the ABI's short reference
			// would put it before.
			ref := farFrame[:len(pcmSrc.Frame)]
			clear(ref[copy(ref, far[min(off, len(far)):]):])
			p.SetReference(ref)
		}
		view, err := p.Process(src)
		if err != nil {
			ended = &FaultError{At: fmt.Sprintf("the frame at %d ms", nowMs), Err: err}
			break
		}
		out = append(out, view...)
		sum.Frames++
	}
	sum.InputMs = len(pcm) / abi.SampleBytes * 1000 / rate
	events.at(sum.InputMs)
	if ended == nil {
		if err := p.Flush(func(tail []byte) error { out = append(out, tail...); return nil }); err != nil {
			ended = &FaultError{At: "flush", Err: err}
		}
	}
	sum.Elapsed = time.Since(start)
	sum.OutputRate = p.OutputRate()
	// call_end may make plugins emit too: close before counting. The
	// pipeline reports call_end faults only as this error, so they are
	// logged and counted here like the faults it reports through OnFault.
	closed = true
	if err := p.Close(ctx); err != nil {
		for _, e := range unjoin(err) {
			faults++
			ev := Event{Name: "plugin_error", Error: e.Error(), Action: "call ended"}
			if pe := (*plugin.Error)(nil); errors.As(e, &pe) {
				ev.Plugin = pe.Plugin
			}
			events.write(ev)
		}
		if ended == nil {
			ended = &FaultError{At: "call_end", Err: err}
		}
	}
	sum.Events = events.count
	sum.Faults = faults
	p.EachDroppedEmits(func(_ string, d plugin.EmitDrops) { sum.DroppedEmits.Add(d) })
	if err := audiofile.WritePCM(opts.Out, out, p.OutputRate()); err != nil {
		return sum, err
	}
	if events.err != nil {
		return sum, fmt.Errorf("writing events: %w", events.err)
	}
	if ended != nil {
		return sum, ended
	}
	return sum, nil
}
