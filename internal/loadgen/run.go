package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/signal"
)

// Saturation thresholds: a point beyond any of them is saturated. A p99 of
// a second is already audible as lag on a call; the rest are loss.
const (
	MaxP99            = time.Second
	MaxP999           = 2 * time.Second
	MaxFailedFraction = 0.01
	MinThroughput     = 0.95
)

// Result is one point: a number of calls run once.
type Result struct {
	// Calls is the number of concurrent calls attempted.
	Calls int
	// Rep numbers the repetition of this call count in a sweep, from 1.
	Rep int
	// Elapsed is the point's wall time, ramp and grace included.
	Elapsed time.Duration

	// FramesDue is Calls × the frames each call sends.
	FramesDue int64
	// FramesSent counts the frames written to sockets.
	FramesSent int64
	// FramesReceived counts frames answered (by as much audio, in one
	// reply or several) within the grace period after the call's last
	// frame.
	FramesReceived int64
	// FramesFailed is FramesDue − FramesReceived: unanswered, or never
	// sent because the connection failed.
	FramesFailed int64
	// ConnectionsFailed counts calls that could not connect, or whose
	// socket broke before they ended it.
	ConnectionsFailed int
	// ExtraReplies counts frames' worth of audio with no frame left to
	// match: a server that sends audio of its own breaks in-order
	// matching.
	ExtraReplies int64
	// MarksReturned counts the marks a Twilio call returned to the host
	// once the audio before them had played, as Twilio does; MarksDropped
	// those it did not, because more than 64 were outstanding.
	MarksReturned, MarksDropped int64
	// ConnectP50, ConnectP95 and ConnectP99 are the times to open a
	// connection (the HTTP upgrade; a SIP call's INVITE to its answer and
	// ACK: its set-up time), over the calls that connected.
	ConnectP50, ConnectP95, ConnectP99 time.Duration
	// RTT is the round trip of each answered frame: reply time − send
	// time.
	RTT Latency
	// SendLag is how late frames were sent against their schedule; large
	// values mean the generator, not the server, was short of CPU.
	SendLag Latency
	// Throughput is FramesReceived / FramesDue.
	Throughput float64
	// Saturated says whether any threshold was crossed, and
	// SaturationReasons which.
	Saturated         bool
	SaturationReasons []string
	// Errors are the distinct reasons calls failed, most frequent first,
	// with their counts: "12× connect: …".
	Errors []string
	// Server is what the server's /metrics said around the point; nil
	// when it has none.
	Server *ServerStats
}

// judge sets Saturated and SaturationReasons from the other fields.
func (r *Result) judge() {
	var why []string
	if r.RTT.P99 > MaxP99 {
		why = append(why, fmt.Sprintf("rtt p99 %s ms > %s ms", ms(r.RTT.P99), ms(MaxP99)))
	}
	if r.RTT.P999 > MaxP999 {
		why = append(why, fmt.Sprintf("rtt p99.9 %s ms > %s ms", ms(r.RTT.P999), ms(MaxP999)))
	}
	if r.Calls > 0 {
		if f := float64(r.ConnectionsFailed) / float64(r.Calls); f > MaxFailedFraction {
			why = append(why, fmt.Sprintf("%.1f%% of connections failed > %.0f%%", f*100, MaxFailedFraction*100))
		}
	}
	if r.FramesDue > 0 {
		if f := float64(r.FramesFailed) / float64(r.FramesDue); f > MaxFailedFraction {
			why = append(why, fmt.Sprintf("%.1f%% of frames failed > %.0f%%", f*100, MaxFailedFraction*100))
		}
	}
	if r.Throughput < MinThroughput {
		why = append(why, fmt.Sprintf("throughput %.1f%% < %.0f%%", r.Throughput*100, MinThroughput*100))
	}
	r.Saturated, r.SaturationReasons = len(why) > 0, why
}

// Run runs cfg.Calls calls against the server, each sending cfg.Duration
// of frames, and measures them. Cancelling ctx closes every call and
// returns what was measured so far with ctx's error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	if cfg.Calls == 0 {
		return Result{}, errors.New("loadgen: no calls")
	}
	if cfg.Ramp >= cfg.Duration {
		return Result{}, fmt.Errorf("loadgen: a ramp of %v is not shorter than the %v calls: they would never all run at once", cfg.Ramp, cfg.Duration)
	}
	r, err := newRunner(cfg)
	if err != nil {
		return Result{}, err
	}
	if r.proto.sip {
		if r.sip, err = newSIPDialer(cfg); err != nil {
			return Result{}, fmt.Errorf("loadgen: SIP: %w", err)
		}
		defer r.sip.close()
	}
	scr := newScraper(r.metricsURL)
	before := scr.scrape(ctx)

	start := time.Now()
	r.origin = start
	var wg sync.WaitGroup
	for _, c := range r.calls {
		wg.Go(func() { c.run(ctx) })
	}
	finished := make(chan struct{})
	stop := context.AfterFunc(ctx, r.abort)
	defer stop()
	// Between the last call's start (Ramp) and the first one's end
	// (Duration) every call is up: the server's memory and active calls
	// are at their plateau.
	during := make(chan *sample, 1)
	go func() {
		t := time.NewTimer((cfg.Ramp+cfg.Duration)/2 + r.period)
		defer t.Stop()
		select {
		case <-t.C:
			during <- scr.scrape(ctx)
		case <-finished:
			during <- nil
		}
	}()
	steady := make(chan *steadyReading, 1)
	go func() { steady <- r.readSteady(ctx, scr, finished) }()
	wg.Wait()
	close(finished)
	elapsed := time.Since(start)
	mid := <-during
	after := scr.scrape(ctx)

	res := r.result(elapsed)
	res.Server = serverStats(before, mid, after)
	res.Server.addSteady(<-steady)
	return res, ctx.Err()
}

// The steady window of a point is when every call is up and sending: it
// opens steadySettle after the ramp's last call dialled (or once every call
// has been answered, if later) and closes steadySettle before the first
// call's last frame. What the server spends in it is what
// frames cost, without the set-ups and hang-ups that the point's CPU as a
// whole (ServerStats.CPUPercent) also holds: 4 WebAssembly instances a
// call are set up in about a millisecond, as much CPU as 40 frames of the
// call.
const (
	steadySettle = 500 * time.Millisecond
	// minSteady is the shortest window read: /proc counts a process's CPU
	// in 10 ms ticks.
	minSteady = time.Second
)

// steadyReading is the server's metrics at the two ends of the steady
// window and the frames answered between them.
type steadyReading struct {
	from, to *sample
	frames   int64
}

// readSteady scrapes the server at both ends of the steady window; nil
// when the point has no such window (a ramp too long for the duration, a
// server without metrics, calls that were all up too late), when it ended
// first, or when a call did not answer through the whole window (it
// failed, or finished).
func (r *runner) readSteady(ctx context.Context, scr *scraper, finished <-chan struct{}) *steadyReading {
	from, to := r.cfg.Ramp+r.period+steadySettle, r.cfg.Duration-steadySettle
	if scr == nil || to-from < minSteady {
		return nil
	}
	wait := func(at time.Duration) bool {
		t := time.NewTimer(time.Until(r.origin.Add(at)))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-finished:
		case <-ctx.Done():
		}
		return false
	}
	// The window opens once every call has been answered, however long
	// a busy server took to set them up.
	for {
		if !wait(from) {
			return nil
		}
		if r.allAnswered() {
			break
		}
		if from += r.period; to-from < minSteady {
			return nil
		}
	}
	first := scr.scrape(ctx)
	answered := make([]int64, len(r.calls))
	for i, c := range r.calls {
		answered[i] = c.fl.received.Load()
	}
	if !wait(to) {
		return nil
	}
	last := scr.scrape(ctx)
	var frames int64
	for i, c := range r.calls {
		n := c.fl.received.Load()
		if answered[i] == 0 || n == answered[i] || n >= r.frames {
			return nil
		}
		frames += n - answered[i]
	}
	if first == nil || last == nil {
		return nil
	}
	return &steadyReading{from: first, to: last, frames: frames}
}

// allAnswered says whether every call has had a frame answered.
func (r *runner) allAnswered() bool {
	for _, c := range r.calls {
		if c.fl.received.Load() == 0 {
			return false
		}
	}
	return true
}

// runner is the plan of one point and its calls.
type runner struct {
	cfg        Config
	proto      protocol
	url        string // the WebSocket URL a call dials, or the TCP address
	header     http.Header
	metricsURL string
	frames     int64         // per call
	period     time.Duration // between a call's frames
	frame      []byte        // the audio of every frame, in cfg.Format
	frameBytes int           // its length: 20 ms
	origin     time.Time     // the schedule's zero; durations below count from it
	calls      []*call
	shards     []*shard
	sip        *sipDialer // a SIP run's user agent
}

func newRunner(cfg Config) (*runner, error) {
	proto, err := cfg.protocol()
	if err != nil {
		return nil, err
	}
	url, err := cfg.callURL()
	if err != nil {
		return nil, err
	}
	murl, err := cfg.metricsURL()
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, proto: proto, url: url, metricsURL: murl, frames: cfg.frames(), period: cfg.period(),
		frameBytes: cfg.Format.BytesPerMs() * frameMs}
	if cfg.Token != "" {
		r.header = http.Header{"Authorization": {"Bearer " + cfg.Token}}
	}
	r.shards = make([]*shard, min(cfg.Calls, 2*runtime.GOMAXPROCS(0)))
	for i := range r.shards {
		r.shards[i] = newShard()
	}
	r.frame = speechFrame(cfg.Format)
	nonce := time.Now().UnixNano()
	r.calls = make([]*call, cfg.Calls)
	for i := range r.calls {
		c := &call{r: r, index: i, shard: r.shards[i%len(r.shards)], fl: newFlight(r.frames, r.period), buf: make([]byte, 4096)}
		c.sess = proto.client.NewBotSession(transport.BotConfig{Format: cfg.Format, MaxAudio: maxReplyAudio(cfg.Format), Call: callInfo(cfg, nonce, i)})
		if proto.server.Buffers() {
			// The carrier plays the host's audio from a buffer of its own
			// and returns each mark once the audio before it has played.
			c.marks = make(chan markAck, maxMarks)
		}
		r.calls[i] = c
	}
	return r, nil
}

// maxReplyAudio is the most audio one message from the host may carry: a
// second of it. The host sends 20 ms frames; more is a runaway.
func maxReplyAudio(f codec.Format) int { return 1000 * f.BytesPerMs() }

// callInfo is what call n of a run tells the server in its start message:
// ids in Twilio's shape, unique to the run (nonce) and the call, and the
// pipeline as a custom parameter.
func callInfo(cfg Config, nonce int64, n int) transport.CallInfo {
	info := transport.CallInfo{
		CallID:    fmt.Sprintf("CA%016x%016x", uint64(nonce), n),
		StreamID:  fmt.Sprintf("MZ%016x%016x", uint64(nonce), n),
		AccountID: fmt.Sprintf("AC%032x", 0),
		Route:     cfg.Pipeline,
	}
	if cfg.Pipeline != "" {
		info.Params = map[string]string{"pipeline": cfg.Pipeline}
	}
	return info
}

// speechFrame is 20 ms of the host's speech-like test signal in format f:
// a plugin that looks at the audio (a VAD, a gain) sees speech, not
// silence. Every call sends it; what a protocol renders around it is the
// session's, so they can share.
func speechFrame(f codec.Format) []byte {
	pcm := signal.Speech(f.Rate, 0.5)
	enc := make([]byte, len(pcm))
	enc = enc[:f.Encode(enc, pcm)]
	n := f.BytesPerMs() * frameMs
	mid := len(enc) / 2 / f.SampleBytes() * f.SampleBytes()
	return enc[mid : mid+n : mid+n] // mid-syllable
}

// phase is call i's offset within a frame period: the fractional part of
// i times the golden ratio, so that the frames of any first n calls are
// spread evenly over the period, not only those of all of them. A host that
// admits the first calls of a surge and refuses the rest then serves calls
// whose phases are as independent of their dial order as real callers'
// are; with phases i/N of the period, its admitted third would all send in
// the first third of every period.
func (r *runner) phase(i int) time.Duration {
	offset, _ := bits.Mul64(uint64(i)*goldenFraction, uint64(r.period))
	return time.Duration(offset)
}

// goldenFraction is 2^64 divided by the golden ratio: multiplying by it
// modulo 2^64 keeps the fractional part of i/φ in 64 bits.
const goldenFraction = 0x9E3779B97F4A7C15

// dialAt is when call i connects: its share of the ramp, rounded down to a
// whole period so that the ramp does not disturb the phases, plus its phase.
func (r *runner) dialAt(i int) time.Duration {
	ramp := r.cfg.Ramp * time.Duration(i) / time.Duration(len(r.calls))
	return ramp.Truncate(r.period) + r.phase(i)
}

// firstSlot is when call i, connected at now, sends its first frame: the
// first instant of its phase not before now.
func (r *runner) firstSlot(i int, now time.Duration) time.Duration {
	p := r.phase(i)
	if now <= p {
		return p
	}
	periods := (now - p + r.period - 1) / r.period
	return p + periods*r.period
}

// abort closes every connection, ending the calls early.
func (r *runner) abort() {
	for _, c := range r.calls {
		if conn := c.conn.Load(); conn != nil {
			c.closing.Store(true)
			conn.close(false)
		}
	}
}

// result adds the calls up.
func (r *runner) result(elapsed time.Duration) Result {
	res := Result{Calls: len(r.calls), Elapsed: elapsed, FramesDue: r.frames * int64(len(r.calls))}
	var connects []time.Duration
	errs := map[string]int{}
	for _, c := range r.calls {
		res.FramesSent += c.sent
		res.FramesReceived += c.fl.received.Load()
		res.ExtraReplies += c.extra
		res.MarksReturned += c.marksReturned.Load()
		res.MarksDropped += c.marksDropped.Load()
		if c.connected {
			connects = append(connects, c.connect)
		}
		if c.err != nil {
			res.ConnectionsFailed++
			errs[c.err.Error()]++
		}
	}
	res.FramesFailed = res.FramesDue - res.FramesReceived
	res.Throughput = float64(res.FramesReceived) / float64(res.FramesDue)
	res.ConnectP50, res.ConnectP95, res.ConnectP99 = percentile(connects, 50), percentile(connects, 95), percentile(connects, 99)
	rtt, lag := newHistogram(), newHistogram()
	for _, s := range r.shards {
		rtt.Merge(s.rtt)
		lag.Merge(s.lag)
	}
	res.RTT, res.SendLag = summarize(rtt), summarize(lag)
	res.Errors = tally(errs)
	res.judge()
	return res
}

// tallyMax is how many distinct errors a Result keeps.
const tallyMax = 5

// tally lists the distinct errors, most frequent first.
func tally(errs map[string]int) []string {
	type count struct {
		msg string
		n   int
	}
	var counts []count
	for msg, n := range errs {
		counts = append(counts, count{msg, n})
	}
	slices.SortFunc(counts, func(a, b count) int { return cmp.Or(b.n-a.n, cmp.Compare(a.msg, b.msg)) })
	var out []string
	for _, c := range counts[:min(len(counts), tallyMax)] {
		out = append(out, fmt.Sprintf("%d× %s", c.n, c.msg))
	}
	return out
}
