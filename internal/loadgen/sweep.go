package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/voxhost/voxhost/host/codec"
)

// DefaultCounts are a sweep's suggested call counts: roughly doubling,
// from a handful of calls to voxhost's default max_calls.
var DefaultCounts = []int{10, 25, 50, 100, 250, 500, 1000}

// SweepResult is a series of points, one per call count and repetition.
type SweepResult struct {
	// URL is the server's address as given (its TCP address for a
	// protocol over TCP), Protocol the protocol spoken.
	URL, Protocol string
	// Format is the audio the calls sent; zero when no point ran.
	Format codec.Format
	// FPS and Duration are each call's frame rate and audio length.
	FPS      int
	Duration time.Duration
	// Points are in the order run: counts as given, repetitions together.
	Points []Result
	// StableMax is the largest call count whose repetitions were all
	// unsaturated; 0 when there is none.
	StableMax int
	// Idle is the idle-connection measurement, when one was made.
	Idle *IdleResult
}

// ParseCounts reads a comma-separated list of call counts: "10,25,50".
func ParseCounts(s string) ([]int, error) {
	var counts []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("loadgen: call count %q is not a positive integer", f)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

// Sweep runs reps points at each call count, in order, and finds the
// stable maximum. Before each point it waits for the server to report no
// active calls (up to 10 s), so that one point's stragglers do not load the
// next. progress, when not nil, gets a progress bar; pass a terminal only.
// Cancelling ctx stops the sweep and returns the points finished so far
// with ctx's error.
func Sweep(ctx context.Context, cfg Config, counts []int, reps int, progress io.Writer) (SweepResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return SweepResult{}, err
	}
	if len(counts) == 0 {
		return SweepResult{}, errors.New("loadgen: no call counts to sweep")
	}
	reps = max(reps, 1)
	sr := SweepResult{URL: cfg.Target(), Protocol: cfg.Protocol, Format: cfg.Format, FPS: cfg.FPS, Duration: cfg.Duration}
	murl, _ := cfg.metricsURL() // checked by withDefaults
	scr := newScraper(murl)

	// The bar counts expected milliseconds, so that it moves during a
	// point rather than once per point.
	pointMs := (cfg.Ramp + cfg.Duration + cfg.Grace).Milliseconds()
	var bar *progressbar.ProgressBar
	if progress != nil {
		bar = progressbar.NewOptions64(pointMs*int64(len(counts)*reps),
			progressbar.OptionSetWriter(progress),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetWidth(30))
		defer bar.Close()
	}
	for _, n := range counts {
		for rep := 1; rep <= reps; rep++ {
			if err := settle(ctx, scr); err != nil {
				return sr.finish(), err
			}
			cfg.Calls = n
			stopBar := func() {}
			if bar != nil {
				bar.Describe(fmt.Sprintf("%d calls, rep %d/%d", n, rep, reps))
				stopBar = tick(bar, int64(len(sr.Points))*pointMs, pointMs)
			}
			res, err := Run(ctx, cfg)
			stopBar()
			if err != nil { // an aborted point measures the abort
				return sr.finish(), err
			}
			res.Rep = rep
			sr.Points = append(sr.Points, res)
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	return sr.finish(), nil
}

// tick advances bar from base by the time elapsed in the current point,
// up to span, until the returned stop is called.
func tick(bar *progressbar.ProgressBar, base, span int64) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = bar.Set64(base + min(time.Since(start).Milliseconds(), span))
			case <-done:
				_ = bar.Set64(base + span)
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// settle waits until the server reports no active calls, for at most
// 10 s; a server that does not say gets a moment for the last point's
// sockets to close.
func settle(ctx context.Context, scr *scraper) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s := scr.scrape(ctx)
		if s == nil || math.IsNaN(s.activeCalls) {
			return sleepUntil(ctx, time.Now().Add(500*time.Millisecond))
		}
		if s.activeCalls == 0 {
			return ctx.Err()
		}
		if err := sleepUntil(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// finish computes the stable maximum.
func (sr SweepResult) finish() SweepResult {
	sr.StableMax = 0
	counts := map[int]bool{} // count → all repetitions unsaturated
	for _, p := range sr.Points {
		ok, seen := counts[p.Calls]
		counts[p.Calls] = (ok || !seen) && !p.Saturated
	}
	for n, ok := range counts {
		if ok {
			sr.StableMax = max(sr.StableMax, n)
		}
	}
	return sr
}

// countsOf lists the distinct call counts of the points, ascending.
func (sr SweepResult) countsOf() []int {
	var counts []int
	for _, p := range sr.Points {
		counts = append(counts, p.Calls)
	}
	slices.Sort(counts)
	return slices.Compact(counts)
}
