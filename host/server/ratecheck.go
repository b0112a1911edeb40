package server

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/voxhost/voxhost/host/codec"
)

// trialLog keeps what a route's plugins log while the route is tried at a
// caller rate. A plugin that refuses a rate usually says why at ERROR
// (resample: "the ratio of "to" and the input rate must be …"), but the
// host trying rates is no error of the operator's: the lines become part
// of the reason the rate is refused instead of the process's log.
type trialLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *trialLog) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn
}

func (l *trialLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Message)
	return nil
}

func (l *trialLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *trialLog) WithGroup(string) slog.Handler      { return l }

// explain adds what the plugins logged to err, the trial's failure.
func (l *trialLog) explain(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return err
	}
	return fmt.Errorf("%w (the plugin said: %s)", err, strings.Join(l.lines, "; "))
}

// logRouteRates says once which caller rates the route named name takes,
// and at debug why it refuses each of the others (a call at such a rate
// is refused with that reason, and logged then).
func (s *Server) logRouteRates(name string, unfit map[int]error, warm float64) {
	var takes []string
	for _, rate := range codec.L16Rates {
		if err := unfit[rate]; err != nil {
			s.log.Debug("route refuses callers at a rate", "pipeline", name, "rate", rate, "err", err)
			continue
		}
		takes = append(takes, strconv.Itoa(rate))
	}
	s.log.Info("route takes callers at", "pipeline", name, "rates_hz", strings.Join(takes, ","),
		"plugins_warm_us_per_frame", math.Round(warm*20e3*10)/10)
}
