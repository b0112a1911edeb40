package loadgen

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The histograms' range and precision: 1 µs to 60 s, 3 significant digits,
// so a value reads back within 0.1% of what was recorded.
const (
	histMinMicros = 1
	histMaxMicros = 60_000_000
	histDigits    = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinMicros, histMaxMicros, histDigits)
}

// record adds d to h, clamped to the histogram's range: a value outside it
// would be dropped, and a dropped outlier is the one that matters.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := min(max(d.Microseconds(), histMinMicros), histMaxMicros)
	_ = h.RecordValue(us) // in range, so it cannot fail
}

// shard is a set of histograms shared by some of a run's calls. One
// histogram per call is the obvious design, but each costs 139 KB at this
// range and precision (139 MB for 1000 calls); a mutex-protected shared one
// costs 17 ns per record under contention on 2 cores against 2–5 ns for a
// private one, which is noise beside a WebSocket round trip. A few shards
// keep the contention rare and the memory constant.
type shard struct {
	mu  sync.Mutex
	rtt *hdrhistogram.Histogram
	lag *hdrhistogram.Histogram
}

func newShard() *shard { return &shard{rtt: newHistogram(), lag: newHistogram()} }

func (s *shard) recordRTT(d time.Duration) {
	s.mu.Lock()
	record(s.rtt, d)
	s.mu.Unlock()
}

func (s *shard) recordLag(d time.Duration) {
	s.mu.Lock()
	record(s.lag, d)
	s.mu.Unlock()
}

// Latency summarizes a distribution of durations, each within 0.1%.
type Latency struct {
	// Count is the number of values.
	Count int64
	// P50 to P999 are the 50th, 90th, 99th and 99.9th percentiles.
	P50, P90, P99, P999 time.Duration
	// Min, Max and Mean are the smallest and largest values and the
	// average. Min is the floor a round trip can reach: what the path
	// itself costs, however many frames a busy machine delayed.
	Min, Max, Mean time.Duration
}

// summarize reads the percentiles off h.
func summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	return Latency{
		Count: h.TotalCount(),
		P50:   us(h.ValueAtQuantile(50)),
		P90:   us(h.ValueAtQuantile(90)),
		P99:   us(h.ValueAtQuantile(99)),
		P999:  us(h.ValueAtQuantile(99.9)),
		// Max and Mean are reported at the histogram's precision too: the
		// highest equivalent value of the top bucket, within 0.1%.
		Min:  us(h.Min()),
		Max:  us(h.Max()),
		Mean: time.Duration(h.Mean() * float64(time.Microsecond)),
	}
}

// percentile is the nearest-rank p-th percentile of ds, which it sorts;
// for the handful of connect times a point has, a histogram is overkill.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p/100*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
