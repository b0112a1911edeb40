package plugintest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/signal"
)

// DefaultSoak is how much audio the soak plays per configuration. The short
// checks pass a plugin that dies later: an AssemblyScript plugin that built
// a string per frame trapped after 15 s of a call. Five minutes catch a
// leak of a few bytes per frame and a plugin whose state overflows after a
// few thousand frames, and play in well under a second for a C plugin in
// fast-forward (about 1 µs a frame).
const DefaultSoak = 5 * time.Minute

// SoakResult is what one configuration's soak measured.
type SoakResult struct {
	// Config is the configuration soaked, as JSON.
	Config string `json:"config"`
	// AudioMs is the audio played, up to the fault if one ended the soak.
	AudioMs int64 `json:"audio_ms"`
	// Frames counts the vox_process calls.
	Frames uint64 `json:"frames"`
	// FrameMsMin and FrameMsMax are the shortest and longest frames played.
	FrameMsMin int `json:"frame_ms_min"`
	FrameMsMax int `json:"frame_ms_max"`
	// MemoryPages is the instance's memory in 64 KiB pages: after
	// call_start, at the end, the most, and the most it may reach (its
	// declared maximum or the host's limit).
	MemoryPages PagesSeen `json:"memory_pages"`
	// Emits counts the events the plugin emitted and the host passed on;
	// DroppedEmits those it dropped, by reason.
	Emits        int              `json:"emits"`
	DroppedEmits plugin.EmitDrops `json:"dropped_emits"`
	// Fault is the error that ended the soak ("" for none) and FaultAtMs
	// the audio played before the frame or event it happened in.
	Fault     string `json:"fault"`
	FaultAtMs int64  `json:"fault_at_ms"`
}

// PagesSeen is an instance's memory over a soak, in 64 KiB pages.
type PagesSeen struct {
	Start uint32 `json:"start"`
	End   uint32 `json:"end"`
	Peak  uint32 `json:"peak"`
	Max   uint32 `json:"max"`
}

// segment is a stretch of the soak: one kind of audio cut into frames.
type segment struct {
	kind string
	pcm  []int16
	// frameMs gives the length of each frame; nil means 20 ms.
	frameMs func() int
	// before is an event delivered first (0: none), with arg.
	before, arg int32
}

// soakPlan makes the soak's audio, deterministically: the same plugin
// always hears the same call. It starts with speech in frames of every
// length from 1 ms to maxMs, then mixes speech, tones, silence, noise,
// full-scale square waves and DTMF keys (each announced by its
// EventDTMF), with a clear now and then, in frames of 20 ms (as carriers
// send), of lengths swept in turn, or of random lengths.
type soakPlan struct {
	rate, maxMs int
	rng         *rand.Rand
	sweep       int // the next swept length, 1..maxMs
	n           int // segments made
}

func (p *soakPlan) next() segment {
	p.n++
	rng := p.rng
	secs := func(lo, hi float64) float64 { return lo + rng.Float64()*(hi-lo) }
	swept := func() int {
		ms := p.sweep
		p.sweep = p.sweep%p.maxMs + 1
		return ms
	}
	if p.n == 1 {
		// Every length once: 1+2+…+maxMs ms of speech (5.05 s for 100).
		return segment{kind: "speech", pcm: signal.Samples(signal.Speech(p.rate, float64(p.maxMs*(p.maxMs+1)/2)/1000)), frameMs: swept}
	}
	var s segment
	switch k := rng.IntN(12); {
	case k < 3:
		s = segment{kind: "speech", pcm: signal.Samples(signal.Speech(p.rate, secs(1, 6)))}
	case k < 5:
		hz := secs(50, float64(p.rate)/2*0.95)
		s = segment{kind: fmt.Sprintf("a %.0f Hz tone", hz), pcm: signal.Samples(signal.Tone(p.rate, hz, secs(0.01, 1), secs(0.5, 3)))}
	case k < 7:
		s = segment{kind: "silence", pcm: make([]int16, int(secs(0.2, 3)*float64(p.rate)))}
	case k < 9:
		s = segment{kind: "noise", pcm: signal.Samples(signal.Noise(p.rate, secs(0.5, 3), secs(0.001, 0.5), rng.Uint64()))}
	case k < 10:
		s = segment{kind: "full scale", pcm: fullScale(int(secs(0.1, 1) * float64(p.rate)))}
	default:
		const keys = "0123456789*#ABCD"
		key := keys[rng.IntN(len(keys))]
		tone := signal.DTMF(p.rate, key, 40+rng.IntN(160), 0.3, 0, 0)
		gap := signal.Silence(p.rate, 40+rng.IntN(200))
		s = segment{kind: fmt.Sprintf("the DTMF key %c", key), pcm: signal.Samples(signal.Concat(tone, gap)), before: abi.EventDTMF, arg: int32(key)}
	}
	if s.before == 0 && rng.IntN(8) == 0 {
		s.before = abi.EventClear
	}
	switch k := rng.IntN(4); {
	case k < 2: // 20 ms, what carriers send
	case k < 3:
		s.frameMs = swept
	default:
		s.frameMs = func() int { return 1 + rng.IntN(p.maxMs) }
	}
	return s
}

// soak plays duration of mixed audio through a fresh instance with cfg and
// adds three checks: faults (a trap or status late in a call), memory (an
// instance that keeps growing) and emits (dropped or of the wrong data).
func (t *tester) soak(cfg []byte, duration time.Duration, suffix string) {
	mark := t.logs.mark()
	fail := func(check, detail string) {
		c := Check{Name: check + suffix, Status: Fail, Detail: detail}
		c.Logs, c.LogsOmitted = t.logs.since(mark)
		t.rep.add(c)
	}
	in, err := t.instantiate(cfg)
	if err != nil {
		fail("soak faults", err.Error())
		t.rep.Soaks = append(t.rep.Soaks, SoakResult{Config: string(cfg)})
		return
	}
	defer in.Close(t.ctx)
	pl := t.play(in, duration.Milliseconds(), 0)
	res := pl.res
	res.Config = string(cfg)
	t.rep.Soaks = append(t.rep.Soaks, res)

	if res.Fault != "" {
		fail("soak faults", t.lateFault(in, cfg, pl))
	} else {
		t.rep.add(Check{Name: "soak faults" + suffix, Status: Pass, Detail: fmt.Sprintf(
			"%s of audio in %d frames of %d-%d ms (speech, tones, silence, noise, full scale, DTMF, clear, flush), no fault",
			seconds(res.AudioMs), res.Frames, res.FrameMsMin, res.FrameMsMax)})
	}
	mp := res.MemoryPages
	if mp.End > mp.Start {
		detail := fmt.Sprintf("memory grew from %d to %s over %s of audio", mp.Start, pages(mp.End), seconds(res.AudioMs))
		if len(pl.pagesAt) > 0 {
			detail += " (" + strings.Join(pl.pagesAt, ", ") + ")"
		}
		detail += ": the plugin keeps memory it allocates while a call runs (an allocation per frame or per event that is never freed); allocate in vox_init"
		if mp.End >= mp.Max {
			detail += fmt.Sprintf("; it has reached its maximum of %s", pages(mp.Max))
		}
		fail("soak memory", detail)
	} else {
		t.rep.add(Check{Name: "soak memory" + suffix, Status: Pass, Detail: fmt.Sprintf("%s throughout %s of audio", pages(mp.Start), seconds(res.AudioMs))})
	}
	if why := emitProblems(in, plugin.EmitDrops{}, 0); why != "" {
		fail("soak emits", fmt.Sprintf("%s passed on; %s", count(res.Emits, "emit"), why))
	} else {
		t.rep.add(Check{Name: "soak emits" + suffix, Status: Pass, Detail: fmt.Sprintf("%s, none dropped", count(res.Emits, "emit"))})
	}
}

// played is what play found: the result, where a fault happened, and the
// memory at tenths of the soak.
type played struct {
	res     SoakResult
	err     error
	where   string
	pagesAt []string
}

// play runs in through the soak: call_start, total ms of the plan's audio
// and events, then flush and call_end. With stopAfter > 0 it stops, with no
// flush, once that many frames have passed (a replay up to a fault).
func (t *tester) play(in *checked, total int64, stopAfter uint64) played {
	var pl played
	res := &pl.res
	res.MemoryPages.Max = t.maxPages
	rate := in.InputRate()
	meta := []byte(`{"call_id":"plugin-test-soak","pipeline":"test","protocol":"file","sample_rate":` + fmt.Sprint(rate) + `,"direction":"inbound","route":"test"}`)
	// The same plan every time: a replay hears the same call.
	plan := &soakPlan{rate: rate, maxMs: t.maxMs, rng: rand.New(rand.NewPCG(14, 5)), sweep: 1}
	res.FrameMsMin = t.maxMs
	nextReport := total / 5
	faulted := func(err error, where string) {
		res.Fault, res.FaultAtMs, pl.err, pl.where = err.Error(), res.AudioMs, err, where
	}
	if _, err := in.Event(abi.EventCallStart, 0, meta); err != nil {
		faulted(err, "call_start")
	}
	res.MemoryPages.Start = in.MemoryPages()
	res.MemoryPages.Peak = res.MemoryPages.Start
soak:
	for res.Fault == "" && res.AudioMs < total {
		seg := plan.next()
		if seg.before != 0 {
			if _, err := in.Event(seg.before, seg.arg, nil); err != nil {
				faulted(err, "an event before "+seg.kind)
				break
			}
		}
		for off := 0; off < len(seg.pcm) && res.AudioMs < total; {
			if stopAfter > 0 && in.Frames() >= stopAfter {
				break soak
			}
			ms := 20
			if seg.frameMs != nil {
				ms = seg.frameMs()
			}
			n := min(ms, int(total-res.AudioMs)) * rate / 1000
			n = min(n, len(seg.pcm)-off)
			// Whole milliseconds only (ABI.md §1): the rest of a segment
			// is dropped.
			n -= n % (rate / 1000)
			if n == 0 {
				break
			}
			write(in, seg.pcm[off:off+n])
			if _, err := in.Process(n); err != nil {
				faulted(err, fmt.Sprintf("%s, a %d ms frame", seg.kind, n*1000/rate))
				break soak
			}
			off += n
			frameMs := n * 1000 / rate
			res.AudioMs += int64(frameMs)
			res.FrameMsMin, res.FrameMsMax = min(res.FrameMsMin, frameMs), max(res.FrameMsMax, frameMs)
			pages := in.MemoryPages()
			res.MemoryPages.Peak = max(res.MemoryPages.Peak, pages)
			if nextReport > 0 && res.AudioMs >= nextReport {
				pl.pagesAt = append(pl.pagesAt, fmt.Sprintf("%d by %s", pages, seconds(res.AudioMs)))
				nextReport += total / 5
			}
		}
	}
	if res.Fault == "" && stopAfter == 0 {
		if _, err := in.Event(abi.EventFlush, 0, nil); err != nil {
			faulted(err, "the flush at the end of the soak")
		} else if _, err := in.Event(abi.EventCallEnd, 0, nil); err != nil {
			faulted(err, "call_end")
		}
	}
	res.Frames = in.Frames()
	res.MemoryPages.End = in.MemoryPages()
	res.Emits = in.sink.emits
	res.DroppedEmits = in.DroppedEmits()
	return pl
}

// lateFault describes a fault the soak found: where it happened and, for
// a trap with memory at its declared maximum, whether it was out of
// memory. Allocators trap when memory runs out (AssemblyScript's stub
// runtime and Rust's abort with unreachable) after every short check has
// passed, and a trap says nothing of why; so the soak is replayed up to
// the faulting frame with the maximum raised to the host's limit: if the
// plugin then gets past that frame and its memory grew beyond the
// original maximum, memory is what it lacked.
func (t *tester) lateFault(in *checked, cfg []byte, pl played) string {
	res := pl.res
	detail := fmt.Sprintf("%s (after %s of audio, in %s)", res.Fault, seconds(res.FaultAtMs), pl.where)
	var perr *plugin.Error
	if !errors.As(pl.err, &perr) || perr.Kind != plugin.KindTrap || perr.Export != abi.ExportProcess {
		return detail
	}
	declared := in.MemoryPages()
	if declared >= t.rt.MemoryLimitPages() {
		return detail + fmt.Sprintf("; memory was at the host's limit of %s (--memory-limit-pages)", pages(declared))
	}
	if declared < t.maxPages {
		return detail // room to grow was left: not out of memory
	}
	roomy, ok := withMemoryMax(t.wasm, t.rt.MemoryLimitPages())
	if !ok {
		return detail
	}
	p, err := t.rt.Load(t.ctx, t.p.Name(), roomy)
	if err != nil {
		return detail
	}
	defer p.Close(t.ctx)
	replay, err := p.Instantiate(t.ctx, plugin.InstanceConfig{Config: cfg, Logger: discard, Sink: &sink{}, MaxFrameMs: t.maxMs})
	if err != nil {
		return detail
	}
	defer replay.Close(t.ctx)
	again := t.play(&checked{Instance: replay, sink: &sink{}}, res.FaultAtMs+1000, res.Frames)
	if again.res.Fault == "" && again.res.Frames >= res.Frames && again.res.MemoryPages.End > declared {
		detail += fmt.Sprintf("; out of memory: memory was at its maximum of %s, and with room to grow the plugin passes that frame, having grown to %s by then. It keeps what it allocates while a call runs (AssemblyScript's stub runtime never frees: a string, array or closure made per frame fills memory); allocate in vox_init, not per frame",
			pages(declared), pages(again.res.MemoryPages.End))
	}
	return detail
}

// withMemoryMax returns a copy of the module with its memory's maximum set
// to maxPages, for the out-of-memory replay; false if the module has no
// memory section it can read. The section walk is the binary format's
// (WebAssembly Core 5.5): sections of id, LEB128 size and body, and a
// memory's limits as a flags byte (1: a maximum follows), LEB128 minimum
// and maximum; LEB128 is Go's uvarint.
func withMemoryMax(wasm []byte, maxPages uint32) ([]byte, bool) {
	if len(wasm) < 8 {
		return nil, false
	}
	out := append([]byte(nil), wasm[:8]...)
	found := false
	for rest := wasm[8:]; len(rest) > 0; {
		id := rest[0]
		size, n := binary.Uvarint(rest[1:])
		if n <= 0 || uint64(len(rest)-1-n) < size {
			return nil, false
		}
		body := rest[1+n : 1+n+int(size)]
		rest = rest[1+n+int(size):]
		if id == 5 {
			count, k := binary.Uvarint(body)
			if k <= 0 || count != 1 || len(body) <= k || body[k] > 1 {
				return nil, false
			}
			min, m := binary.Uvarint(body[k+1:])
			if m <= 0 {
				return nil, false
			}
			nb := binary.AppendUvarint(nil, 1)
			nb = append(nb, 1)
			nb = binary.AppendUvarint(nb, min)
			body = binary.AppendUvarint(nb, uint64(max(maxPages, uint32(min))))
			found = true
		}
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, found
}

// discard swallows the replay's log: the report has the soak's own.
var discard = slog.New(slog.DiscardHandler)

// seconds writes a time of audio as people read it: "23.18 s".
func seconds(ms int64) string { return fmt.Sprintf("%.2f s", float64(ms)/1000) }

// pages writes a count of 64 KiB pages.
func pages(n uint32) string { return count(int(n), "page") }

// count writes n things: "1 page", "3 pages".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
