package server

import (
	"math"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// TestARouteIsPricedAtItsWarmCost: before any call of a route is measured,
// admission prices its plugins at what they cost warm, so a route of
// heavy plugins is dear and a passthrough cheap from the first call of a
// surge; once a route's calls are measured, a new price (a reload) leaves
// it alone. The spinning plugin costs thousands of times a passthrough on
// any machine, so the test compares the two, not a machine's speed.
func TestARouteIsPricedAtItsWarmCost(t *testing.T) {
	c := hosttest.Catalog(t)
	cfg := pipeline.CallConfig{InputRate: 8000}
	light := warmCost(hosttest.Pipeline(t, c, "passthrough", cfg), 8000)
	heavy := warmCost(hosttest.Pipeline(t, c, "testdata/spin_frame.wasm budget_ms=1000", cfg), 8000)
	if light <= 0 || heavy < 100*light {
		t.Fatalf("warm cost: passthrough %.6f, spin_frame %.6f of a core; want the spinner over 100x the passthrough", light, heavy)
	}

	rt := &realtime{prior: 0.001, routes: map[string]*routeCost{}}
	measured := rt.cost("measured")
	measured.calls.Add(1)
	measured.perCall.Store(math.Float64bits(0.01))
	rt.price(map[string]float64{"light": light, "heavy": heavy, "measured": heavy})
	if got, want := rt.cost("heavy").cost(), heavy*atScale; got != want {
		t.Errorf("heavy route priced at %v, want its warm cost times %v: %v", got, atScale, want)
	}
	if got, want := rt.cost("light").cost(), light*atScale; got != want {
		t.Errorf("light route priced at %v, want %v", got, want)
	}
	if got := rt.cost("unpriced").cost(); got != rt.prior {
		t.Errorf("a route without a warm cost priced at %v, want the prior %v", got, rt.prior)
	}
	if got := rt.cost("measured").cost(); got != 0.01 {
		t.Errorf("a route whose calls were measured repriced to %v, want its measured 0.01", got)
	}
}
