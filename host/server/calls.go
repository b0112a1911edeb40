package server

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/pipeline"
)

// CallSummary is what Calls says of one live call.
type CallSummary struct {
	// ID names the call, as its log lines do.
	ID string `json:"id"`
	// Protocol is the caller leg's protocol.
	Protocol string `json:"protocol"`
	// Route is the route it runs; empty until its stream started.
	Route string `json:"route,omitempty"`
	// Upstream is the bot leg's dialect; empty for an echo.
	Upstream string `json:"upstream,omitempty"`
	// Format is the caller leg's audio, as in "8 kHz μ-law".
	Format string `json:"format,omitempty"`
	// Started is when the connection came in.
	Started time.Time `json:"started"`
	// Frames counts the caller's audio frames so far.
	Frames uint64 `json:"frames"`
	// Inbound and Outbound are each stage's sampled cost per frame.
	Inbound  []pipeline.StageCost `json:"inbound,omitempty"`
	Outbound []pipeline.StageCost `json:"outbound,omitempty"`
	// Recorded are the streams the call's recording started with; absent
	// when it records nothing. RecordingID is the id its files are named
	// and listed by (GET /calls/{id}/recording): the carrier's own when
	// its start message carries one (Twilio's CallSid), so not always ID.
	Recorded    []string `json:"recorded,omitempty"`
	RecordingID string   `json:"recording_id,omitempty"`
	// Media is what the caller leg's RTP says (a SIP call's loss and
	// jitter, both ways); nil for a leg without (MediaReporter).
	Media *MediaStats `json:"media,omitempty"`
}

// callView is what a call publishes for Calls once its stream started:
// the fields the call's goroutine set, behind an atomic pointer.
type callView struct {
	route, upstream, format string
	in, out                 *pipeline.Pipeline
	recorded                []string
	recordingID             string
}

// Calls lists the live calls, oldest first, with each plugin's sampled
// cost per frame: what GET /calls on the admin API shows.
func (s *Server) Calls() []CallSummary {
	s.mu.Lock()
	calls := make([]*call, 0, len(s.calls))
	for c := range s.calls {
		calls = append(calls, c)
	}
	s.mu.Unlock()
	out := make([]CallSummary, 0, len(calls))
	for _, c := range calls {
		cs := CallSummary{ID: c.summaryID, Protocol: c.proto.Name(), Started: c.started, Frames: c.frames.Load()}
		if v := c.view.Load(); v != nil {
			cs.Route, cs.Upstream, cs.Format = v.route, v.upstream, v.format
			cs.Recorded, cs.RecordingID = v.recorded, v.recordingID
			cs.Inbound = v.in.Costs()
			if v.out != nil {
				cs.Outbound = v.out.Costs()
			}
		}
		if e, ok := c.conn.(extLeg); ok {
			if r, ok := e.l.(MediaReporter); ok {
				st := r.MediaStats()
				cs.Media = &st
			}
		}
		out = append(out, cs)
	}
	slices.SortFunc(out, func(a, b CallSummary) int { return a.Started.Compare(b.Started) })
	return out
}

// sample has p, the route's pipeline in direction (inbound, outbound),
// time one frame in SampleEvery into voxhost_plugin_frame_seconds, with
// each stage's observer looked up once.
func (c *call) sample(p *pipeline.Pipeline, direction string) {
	if p == nil || c.s.opts.SampleEvery == 0 {
		return
	}
	stages := p.Stages()
	obs := make([]prometheus.Observer, len(stages))
	for i, st := range stages {
		obs[i] = c.s.metrics.pluginFrame.WithLabelValues(c.route.Name, direction, st.Name())
	}
	p.Sample(c.s.opts.SampleEvery, func(stage int, d time.Duration) { obs[stage].Observe(d.Seconds()) })
}
