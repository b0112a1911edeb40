package admin

import (
	"math"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/voxhost/voxhost/host/server"
)

// CallsInfo is GET /calls's answer.
type CallsInfo struct {
	// Calls are the live calls, oldest first, each with its plugins'
	// sampled cost per frame (server.Calls).
	Calls []server.CallSummary `json:"calls"`
	// Ended counts the calls that ended since the host started, by
	// outcome (voxhost_calls_total summed over protocols); absent when
	// the server's metrics cannot be read back.
	Ended map[string]float64 `json:"ended,omitempty"`
}

// listCalls serves GET /calls.
func (h *handler) listCalls(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, CallsInfo{Calls: h.m.srv.Calls(), Ended: h.outcomes()})
}

// getCall serves GET /calls/{id}: one live call, found by the id it was
// given (the raw protocol's ?call_id=, as the console's calls are).
func (h *handler) getCall(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, c := range h.m.srv.Calls() {
		if c.ID == id {
			writeJSON(w, http.StatusOK, c)
			return
		}
	}
	writeError(w, http.StatusNotFound, "no live call %q: it ended, or has not started", id)
}

// outcomes reads voxhost_calls_total back from the server's registry.
func (h *handler) outcomes() map[string]float64 {
	metrics, ok := h.gather("voxhost_calls_total")
	if !ok {
		return nil
	}
	out := map[string]float64{}
	for _, m := range metrics {
		if outcome, ok := label(m, "outcome"); ok {
			out[outcome] += m.GetCounter().GetValue()
		}
	}
	return out
}

// gather reads the series of the family name back from the server's
// registry; false when it cannot be read.
func (h *handler) gather(name string) ([]*dto.Metric, bool) {
	g, ok := h.m.srv.Registry().(prometheus.Gatherer)
	if !ok {
		return nil, false
	}
	families, err := g.Gather()
	if err != nil {
		return nil, false
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric(), true
		}
	}
	return nil, true
}

// label is the value of m's label name.
func label(m *dto.Metric, name string) (string, bool) {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue(), true
		}
	}
	return "", false
}

// CostInfo is what the sampled timing (one frame in sample_every per call,
// voxhost_plugin_frame_seconds) says of one stage of a route over every
// call since the host started.
type CostInfo struct {
	// Frames is how many frames were timed.
	Frames uint64 `json:"frames"`
	// MeanNs is their mean time in the stage, in ns.
	MeanNs float64 `json:"mean_ns"`
	// P50Ns and P99Ns bound the median and the 99th percentile from
	// above: the upper edges of the histogram buckets that hold them.
	P50Ns float64 `json:"p50_ns"`
	P99Ns float64 `json:"p99_ns"`
}

// stageCosts reads voxhost_plugin_frame_seconds back, by route, direction
// and plugin.
func (h *handler) stageCosts() map[[3]string]*CostInfo {
	metrics, _ := h.gather("voxhost_plugin_frame_seconds")
	out := make(map[[3]string]*CostInfo, len(metrics))
	for _, m := range metrics {
		route, _ := label(m, "pipeline")
		direction, _ := label(m, "direction")
		plugin, _ := label(m, "plugin")
		hist := m.GetHistogram()
		n := hist.GetSampleCount()
		if n == 0 {
			continue
		}
		c := &CostInfo{Frames: n, MeanNs: hist.GetSampleSum() / float64(n) * 1e9}
		c.P50Ns, c.P99Ns = bucketBound(hist, 0.50), bucketBound(hist, 0.99)
		out[[3]string{route, direction, plugin}] = c
	}
	return out
}

// bucketBound is the upper edge, in ns, of the first bucket of hist whose
// cumulative count reaches the quantile q; +Inf past the last bucket.
func bucketBound(hist *dto.Histogram, q float64) float64 {
	want := uint64(math.Ceil(q * float64(hist.GetSampleCount())))
	for _, b := range hist.GetBucket() {
		if b.GetCumulativeCount() >= want {
			return b.GetUpperBound() * 1e9
		}
	}
	return math.Inf(1)
}
