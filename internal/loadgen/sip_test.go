package loadgen_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/sip"
	"github.com/voxhost/voxhost/internal/hosttest"
	"github.com/voxhost/voxhost/internal/loadgen"
)

// serveSIP serves s's calls over SIP on a loopback port, from loopback
// trunks, with the endpoint's metrics in reg, and returns its address.
func serveSIP(t testing.TB, s *server.Server, reg prometheus.Registerer) string {
	t.Helper()
	cfg := config.DefaultSIP()
	cfg.Listen = "127.0.0.1:0"
	cfg.RTPPortMin, cfg.RTPPortMax = 36000, 36999
	cfg.Trunks = map[string]config.SIPTrunk{"local": {Sources: []string{"127.0.0.1"}}}
	ep, err := sip.New(sip.Options{Config: cfg, Server: s, Registerer: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan netip.AddrPort, 1)
	done := make(chan error, 1)
	go func() { done <- ep.ListenAndServe(ctx, func(a netip.AddrPort) { addrc <- a }) }()
	var addr netip.AddrPort
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return addr.String()
}

// TestSIPCalls places SIP calls on an echo route: every frame sent as
// RTP comes back, but for the frames the host's jitter buffer says it
// dropped (late, or drained after a burst: a busy machine delays packets),
// and the set-up time is measured (p50, p95, p99).
func TestSIPCalls(t *testing.T) {
	const calls = 3
	url, s := newVoxhostServer(t, nil)
	reg := prometheus.NewRegistry()
	res, err := loadgen.Run(context.Background(), loadgen.Config{Protocol: loadgen.ProtocolSIP, SIPAddr: serveSIP(t, s, reg), URL: url,
		Calls: calls, Duration: 2 * time.Second, Ramp: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ConnectionsFailed != 0 || res.FramesFailed != 0 || res.FramesSent != calls*100 {
		t.Fatalf("sent %d, failed %d frames, %d calls failed", res.FramesSent, res.FramesFailed, res.ConnectionsFailed)
	}
	// A call's jitter-buffer counts are added as its media closes.
	var dropped float64
	hosttest.WaitFor(t, "the calls' media to close", func() bool {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		closed := uint64(0)
		dropped = 0
		for _, f := range families {
			switch f.GetName() {
			case "voxhost_rtp_jitter_seconds":
				closed = f.GetMetric()[0].GetHistogram().GetSampleCount()
			case "voxhost_rtp_late_total", "voxhost_rtp_drained_frames_total":
				dropped += f.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return closed == calls
	})
	if got := float64(res.FramesReceived); got > float64(res.FramesSent) || got < float64(res.FramesSent)-dropped {
		t.Fatalf("sent %d, received %d; the host dropped %v", res.FramesSent, res.FramesReceived, dropped)
	}
	if res.ConnectP50 <= 0 || res.ConnectP99 < res.ConnectP95 || res.ConnectP95 < res.ConnectP50 {
		t.Fatalf("set-up p50 %v, p95 %v, p99 %v: want 0 < p50 ≤ p95 ≤ p99", res.ConnectP50, res.ConnectP95, res.ConnectP99)
	}
}
