package loadgen_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/sip"
	"github.com/voxhost/voxhost/internal/loadgen"
)

// serveSIP serves s's calls over SIP on a loopback port, from loopback
// trunks, and returns its address.
func serveSIP(t testing.TB, s *server.Server) string {
	t.Helper()
	cfg := config.DefaultSIP()
	cfg.Listen = "127.0.0.1:0"
	cfg.RTPPortMin, cfg.RTPPortMax = 36000, 36999
	cfg.Trunks = map[string]config.SIPTrunk{"local": {Sources: []string{"127.0.0.1"}}}
	ep, err := sip.New(sip.Options{Config: cfg, Server: s, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
// RTP comes back, and the set-up time is measured (p50, p95, p99).
func TestSIPCalls(t *testing.T) {
	url, s := newVoxhostServer(t, nil)
	res, err := loadgen.Run(context.Background(), loadgen.Config{Protocol: loadgen.ProtocolSIP, SIPAddr: serveSIP(t, s), URL: url,
		Calls: 3, Duration: 2 * time.Second, Ramp: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ConnectionsFailed != 0 || res.FramesFailed != 0 || res.FramesReceived != res.FramesSent || res.FramesSent != 3*100 {
		t.Fatalf("sent %d, received %d, failed %d frames, %d calls failed", res.FramesSent, res.FramesReceived, res.FramesFailed, res.ConnectionsFailed)
	}
	if res.ConnectP50 <= 0 || res.ConnectP99 < res.ConnectP95 || res.ConnectP95 < res.ConnectP50 {
		t.Fatalf("set-up p50 %v, p95 %v, p99 %v: want 0 < p50 ≤ p95 ≤ p99", res.ConnectP50, res.ConnectP95, res.ConnectP99)
	}
}
