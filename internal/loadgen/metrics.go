package loadgen

import (
	"context"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The series read from the server's /metrics.
const (
	metricRSS         = "process_resident_memory_bytes"
	metricCPU         = "process_cpu_seconds_total"
	metricActiveCalls = "voxhost_active_calls"
	metricHeap        = "go_memstats_heap_inuse_bytes"
	metricGCSummary   = "go_gc_duration_seconds"
)

// gcHistograms are the names client_golang gives the runtime's GC pause
// histogram when a server opts in to runtime/metrics series, newest first.
var gcHistograms = []string{"go_sched_pauses_total_gc_seconds", "go_gc_pauses_seconds"}

// sample is one reading of the server's metrics; NaN marks a series the
// server does not export.
type sample struct {
	at          time.Time
	rss         float64
	cpu         float64
	activeCalls float64
	heap        float64
	gcCount     float64       // pauses so far, go_gc_duration_seconds_count
	gcMax       float64       // the longest of the last 256 pauses, seconds
	gcBuckets   []*dto.Bucket // cumulative pause histogram, when exported
}

// scraper reads a server's /metrics.
type scraper struct {
	url    string
	client *http.Client
}

func newScraper(url string) *scraper {
	if url == "" {
		return nil
	}
	return &scraper{url: url, client: &http.Client{Timeout: 5 * time.Second}}
}

// scrape reads the metrics once; nil means the server has none to give
// (no scraper, unreachable, not Prometheus text).
func (s *scraper) scrape(ctx context.Context) *sample {
	if s == nil {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil
	}
	// Text format 0.0.4, which every Prometheus client library serves and
	// expfmt's text parser reads.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	smp := &sample{
		at:          time.Now(),
		rss:         value(families[metricRSS]),
		cpu:         value(families[metricCPU]),
		activeCalls: value(families[metricActiveCalls]),
		heap:        value(families[metricHeap]),
		gcCount:     math.NaN(),
		gcMax:       math.NaN(),
	}
	if f := families[metricGCSummary]; f != nil && len(f.Metric) > 0 && f.Metric[0].Summary != nil {
		sum := f.Metric[0].Summary
		smp.gcCount = float64(sum.GetSampleCount())
		for _, q := range sum.Quantile {
			if q.GetQuantile() == 1 {
				smp.gcMax = q.GetValue()
			}
		}
	}
	for _, name := range gcHistograms {
		if f := families[name]; f != nil && len(f.Metric) > 0 && f.Metric[0].Histogram != nil {
			smp.gcBuckets = f.Metric[0].Histogram.Bucket
			break
		}
	}
	return smp
}

// value is the value of a family's first gauge, counter or untyped
// series, NaN if there is none.
func value(f *dto.MetricFamily) float64 {
	if f == nil || len(f.Metric) == 0 {
		return math.NaN()
	}
	m := f.Metric[0]
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return math.NaN()
}

// ServerStats is what the server's /metrics said around one point: read
// before the calls start, midway through their audio, and after they end.
type ServerStats struct {
	// RSSBefore, RSSDuring and RSSAfter are the resident memory, bytes.
	RSSBefore, RSSDuring, RSSAfter int64
	// CPUPercent is the server's CPU time over the point's wall time: 100
	// is one core busy.
	CPUPercent float64
	// ActiveBefore, ActiveDuring and ActiveAfter are voxhost_active_calls.
	ActiveBefore, ActiveDuring, ActiveAfter int
	// GCPauses is the number of GC pauses during the point.
	GCPauses int64
	// GCPauseMax is the longest GC pause. From the pause histogram when
	// the server exports one, it is the upper bound of the highest bucket
	// that gained a pause during the point; otherwise it is the longest of
	// the server's last 256 pauses when the point ended
	// (go_gc_duration_seconds{quantile="1"}), which may predate the point.
	GCPauseMax time.Duration
	// GCPauseSource names the series GCPauseMax comes from.
	GCPauseSource string
	// SteadyCPUPerFrame is the server's CPU time per frame answered in the
	// point's steady window, while every call was up and sending: what a
	// frame costs, with no call set up or hung up meanwhile.
	// SteadyCPUPercent is the window's CPU time over its wall time, and
	// SteadyFrames the frames answered in it. All three are zero when the
	// point had no steady window (a ramp too long for its duration, a call
	// that was not up through it).
	SteadyCPUPerFrame time.Duration
	SteadyCPUPercent  float64
	SteadyFrames      int64
	// Missing lists the series the server does not export; their fields
	// above are zero.
	Missing []string
}

// serverStats compares the readings around a point; nil without both ends.
func serverStats(before, during, after *sample) *ServerStats {
	if before == nil || after == nil {
		return nil
	}
	if during == nil {
		during = after
	}
	st := &ServerStats{}
	missing := func(name string, vs ...float64) bool {
		if slices.ContainsFunc(vs, math.IsNaN) {
			st.Missing = append(st.Missing, name)
			return true
		}
		return false
	}
	if !missing(metricRSS, before.rss, during.rss, after.rss) {
		st.RSSBefore, st.RSSDuring, st.RSSAfter = int64(before.rss), int64(during.rss), int64(after.rss)
	}
	if !missing(metricCPU, before.cpu, after.cpu) {
		if wall := after.at.Sub(before.at).Seconds(); wall > 0 {
			st.CPUPercent = (after.cpu - before.cpu) / wall * 100
		}
	}
	if !missing(metricActiveCalls, before.activeCalls, during.activeCalls, after.activeCalls) {
		st.ActiveBefore, st.ActiveDuring, st.ActiveAfter = int(before.activeCalls), int(during.activeCalls), int(after.activeCalls)
	}
	if !missing(metricGCSummary, before.gcCount, after.gcCount) {
		st.GCPauses = int64(after.gcCount - before.gcCount)
	}
	if bound, ok := newPauseBound(before.gcBuckets, after.gcBuckets); ok {
		st.GCPauseMax, st.GCPauseSource = bound, "histogram"
	} else if !math.IsNaN(after.gcMax) {
		st.GCPauseMax, st.GCPauseSource = seconds(after.gcMax), metricGCSummary+`{quantile="1"}`
	}
	return st
}

// addSteady fills the steady-window figures from r, if it is not nil and
// its two readings have the CPU series.
func (st *ServerStats) addSteady(r *steadyReading) {
	if st == nil || r == nil || r.frames <= 0 || math.IsNaN(r.from.cpu) || math.IsNaN(r.to.cpu) {
		return
	}
	cpu := r.to.cpu - r.from.cpu
	wall := r.to.at.Sub(r.from.at).Seconds()
	if wall <= 0 || cpu < 0 {
		return
	}
	st.SteadyCPUPerFrame = time.Duration(cpu / float64(r.frames) * float64(time.Second))
	st.SteadyCPUPercent = cpu / wall * 100
	st.SteadyFrames = r.frames
}

// newPauseBound is the upper bound of the highest histogram bucket whose
// own count grew between two readings of the same cumulative histogram.
func newPauseBound(before, after []*dto.Bucket) (time.Duration, bool) {
	if len(after) == 0 || len(before) != len(after) {
		return 0, false
	}
	var bound time.Duration
	var prevGrowth uint64
	for i, b := range after {
		growth := b.GetCumulativeCount() - before[i].GetCumulativeCount()
		if growth > prevGrowth && !math.IsInf(b.GetUpperBound(), 1) {
			bound = seconds(b.GetUpperBound())
		}
		prevGrowth = growth
	}
	return bound, true
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
