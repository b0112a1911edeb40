package admin

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

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
	g, ok := h.m.srv.Registry().(prometheus.Gatherer)
	if !ok {
		return nil
	}
	families, err := g.Gather()
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "voxhost_calls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
