package loadgen_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/botsim"
	"github.com/voxhost/voxhost/internal/loadgen"
)

// newVoxhost serves the passthrough pipeline, named "main", on a loopback
// port and returns its ws:// URL; tokens, if any, are required.
func newVoxhost(t testing.TB, tokens ...string) string {
	url, _ := newVoxhostServer(t, nil, tokens...)
	return url
}

// newVoxhostRoutes is newVoxhost with a route "relay" besides "main",
// the same pipeline relayed to upstream, when that is not nil.
func newVoxhostRoutes(t testing.TB, upstream *server.Upstream, tokens ...string) string {
	url, _ := newVoxhostServer(t, upstream, tokens...)
	return url
}

// newVoxhostServer is newVoxhostRoutes that returns the server too.
func newVoxhostServer(t testing.TB, upstream *server.Upstream, tokens ...string) (string, *server.Server) {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New(rt, "")
	specs, err := pipeline.ParseSpec("passthrough")
	if err != nil {
		t.Fatal(err)
	}
	def, err := cat.Definition(ctx, "main", specs)
	if err != nil {
		t.Fatal(err)
	}
	routes := server.EchoRoutes(map[string]*pipeline.Definition{"main": def})
	if upstream != nil {
		routes["relay"] = &server.Route{Name: "relay", Inbound: def, Upstream: upstream}
	}
	s, err := server.New(ctx, server.Options{Runtime: rt, Routes: routes,
		DefaultRoute: "main", Tokens: tokens, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Drain(ctx)
		hs.Close()
		cat.Close(ctx)
		rt.Close(ctx)
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http"), s
}

// serveStream serves s's calls of proto, a protocol over TCP, on a
// loopback port and returns its address.
func serveStream(t testing.TB, s *server.Server, proto transport.Protocol) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.ServeStream(ctx, l, proto, ""); err != nil {
			t.Errorf("ServeStream: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return l.Addr().String()
}

// TestThroughARelay calls a route relayed to the bot simulator in echo
// mode: the caller's frames go through the host to the bot and back, are
// re-framed by the host's playout and paced by its clock (raw) or sent
// ahead (Twilio), and each is still answered once, by its audio.
func TestThroughARelay(t *testing.T) {
	for _, dialect := range []string{botsim.ProtocolRaw, botsim.ProtocolTwilio} {
		t.Run("bot speaks "+dialect, func(t *testing.T) {
			sim, botURL := botsim.Start(t, botsim.Config{RecordAudio: -1})
			d, err := transport.LookupDialect(dialect)
			if err != nil {
				t.Fatal(err)
			}
			url := newVoxhostRoutes(t, &server.Upstream{URL: botURL + botsim.Paths[dialect], Dialect: d, Format: codec.Telephony})
			for _, proto := range []string{loadgen.ProtocolRaw, loadgen.ProtocolTwilio} {
				res, err := loadgen.Run(context.Background(), loadgen.Config{URL: url, Protocol: proto, Pipeline: "relay",
					Calls: 4, Duration: 500 * time.Millisecond, Ramp: 100 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s caller: rtt p50 %v p99 %v max %v", proto, res.RTT.P50, res.RTT.P99, res.RTT.Max)
				if res.FramesReceived != res.FramesDue || res.ExtraReplies != 0 || res.ConnectionsFailed != 0 {
					t.Errorf("%s caller: received %d of %d, %d extra, errors %q", proto, res.FramesReceived, res.FramesDue, res.ExtraReplies, res.Errors)
				}
			}
			for _, c := range sim.Calls() {
				if c.AudioIn != 25*loadgen.FrameBytes || c.AudioOut != c.AudioIn {
					t.Errorf("%s: the bot heard %d bytes and said %d, want %d", c.Summary(), c.AudioIn, c.AudioOut, 25*loadgen.FrameBytes)
				}
			}
		})
	}
}

func TestAgainstVoxhost(t *testing.T) {
	url := newVoxhost(t, "s3cret")
	for _, proto := range []string{loadgen.ProtocolRaw, loadgen.ProtocolTwilio} {
		t.Run(proto, func(t *testing.T) {
			const calls = 10
			res, err := loadgen.Run(context.Background(), loadgen.Config{URL: url, Protocol: proto, Pipeline: "main", Token: "s3cret",
				Calls: calls, Duration: 1500 * time.Millisecond, Ramp: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: rtt p50 %v p99 %v max %v, connect p50 %v", proto, res.RTT.P50, res.RTT.P99, res.RTT.Max, res.ConnectP50)
			if res.FramesReceived != res.FramesDue || res.FramesSent != res.FramesDue || res.FramesDue != calls*75 {
				t.Errorf("frames due %d, sent %d, received %d", res.FramesDue, res.FramesSent, res.FramesReceived)
			}
			if res.Throughput < 0.99 || res.Saturated || res.ConnectionsFailed != 0 {
				t.Errorf("throughput %.3f, saturated %v %q, errors %q", res.Throughput, res.Saturated, res.SaturationReasons, res.Errors)
			}
			s := res.Server
			if s == nil {
				t.Fatal("no server stats from voxhost's /metrics")
			}
			if s.RSSDuring <= 0 || s.ActiveDuring != calls || s.GCPauseSource == "" || len(s.Missing) != 0 {
				t.Errorf("server stats %+v", *s)
			}
		})
	}
}

// TestSteadyWindow prices frames from the window when every call is up,
// and only when the point has one.
func TestSteadyWindow(t *testing.T) {
	url := newVoxhost(t)
	// Enough calls that the window's CPU is many of /proc's 10 ms ticks.
	const calls = 20
	res, err := loadgen.Run(context.Background(), loadgen.Config{URL: url, Pipeline: "main", Calls: calls,
		Duration: 2500 * time.Millisecond, Ramp: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Server
	if s == nil {
		t.Fatal("no server stats from voxhost's /metrics")
	}
	if res.ConnectionsFailed == 0 && (s.SteadyFrames <= 0 || s.SteadyFrames >= res.FramesReceived || s.SteadyCPUPerFrame <= 0 || s.SteadyCPUPercent <= 0) {
		t.Errorf("steady window: %d of %d frames, %v a frame, %.1f%% CPU", s.SteadyFrames, res.FramesReceived, s.SteadyCPUPerFrame, s.SteadyCPUPercent)
	}
	// A ramp that leaves under a second of all calls up has no window.
	res, err = loadgen.Run(context.Background(), loadgen.Config{URL: url, Pipeline: "main", Calls: calls,
		Duration: 1500 * time.Millisecond, Ramp: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Server; s == nil || s.SteadyFrames != 0 || s.SteadyCPUPerFrame != 0 {
		t.Errorf("a point without a steady window priced frames: %+v", s)
	}
}

func TestWrongToken(t *testing.T) {
	url := newVoxhost(t, "s3cret")
	res, err := loadgen.Run(context.Background(), loadgen.Config{URL: url, Token: "guess", Calls: 3,
		Duration: 200 * time.Millisecond, Ramp: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ConnectionsFailed != 3 || len(res.Errors) != 1 || res.Errors[0] != "3× connect: HTTP 401" {
		t.Fatalf("failed %d, errors %q", res.ConnectionsFailed, res.Errors)
	}
}

func TestIdleAgainstVoxhost(t *testing.T) {
	url := newVoxhost(t)
	for _, proto := range []string{loadgen.ProtocolRaw, loadgen.ProtocolTwilio} {
		t.Run(proto, func(t *testing.T) {
			res, err := loadgen.Idle(context.Background(), loadgen.Config{URL: url, Protocol: proto,
				Ramp: 200 * time.Millisecond, IdleHold: 300 * time.Millisecond}, 20)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %+v", proto, res)
			if res.Conns != 20 || res.Failed != 0 || res.Dropped != 0 || !res.HasServer || res.ActiveHeld != 20 || res.ConnectP50 <= 0 {
				t.Errorf("%+v", res)
			}
		})
	}
}

// TestAllocationsPerFrame counts every heap allocation in the process, the
// generator's and the server's, while raw and Twilio calls run in steady
// state. voxhost's call loop allocates nothing per frame (its own test says
// so), so what is left is the generator's. A call the server has closed
// still allocates 2 s later (its close timer fires), so both protocols run
// at once, and the window opens more than 2 s in, after the calls of
// earlier tests are quite gone.
func TestAllocationsPerFrame(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations over a 4 s run")
	}
	url := newVoxhost(t)
	const callsEach, fps = 10, 50
	protocols := []string{loadgen.ProtocolRaw, loadgen.ProtocolTwilio}
	done := make(chan error, len(protocols))
	for _, proto := range protocols {
		go func() {
			// No metrics: reading them allocates, and not per frame.
			_, err := loadgen.Run(context.Background(), loadgen.Config{URL: url, Protocol: proto, MetricsURL: "-",
				Calls: callsEach, FPS: fps, Duration: 4 * time.Second, Ramp: 20 * time.Millisecond})
			done <- err
		}()
	}
	time.Sleep(2200 * time.Millisecond)
	const window = 1500 * time.Millisecond
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	time.Sleep(window)
	runtime.ReadMemStats(&after)
	for range protocols {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	frames := float64(len(protocols)*callsEach*fps) * window.Seconds()
	perFrame := float64(after.Mallocs-before.Mallocs) / frames
	t.Logf("%.4f allocations per frame (%d in %.0f frames), generator and server together", perFrame, after.Mallocs-before.Mallocs, frames)
	// Not exactly zero: the runtime allocates now and then.
	if perFrame > 0.05 {
		t.Errorf("%.3f allocations per frame", perFrame)
	}
}

// TestEveryProtocol runs a short load through every protocol registered
// with both roles, each spoken through its client role in the first
// format it carries, against a real server's echo route: loadgen needs
// nothing of a protocol beyond what host/transport registers.
func TestEveryProtocol(t *testing.T) {
	url, srv := newVoxhostServer(t, nil)
	var names []string
	for _, p := range transport.Protocols() {
		if _, err := transport.LookupDialect(p.Name()); err != nil {
			continue // a server role only: nothing to call it with
		}
		names = append(names, p.Name())
		t.Run(p.Name(), func(t *testing.T) {
			cfg := loadgen.Config{URL: url, Protocol: p.Name(), Pipeline: "main", Calls: 3, Duration: 400 * time.Millisecond, Ramp: 60 * time.Millisecond}
			if _, ok := p.(transport.Framer); ok {
				// Its own listener, whose route is the default.
				cfg.TCPAddr, cfg.Pipeline = serveStream(t, srv, p), ""
			}
			res, err := loadgen.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("rtt p50 %v p99 %v, %d marks returned", res.RTT.P50, res.RTT.P99, res.MarksReturned)
			if res.FramesReceived != res.FramesDue || res.ExtraReplies != 0 || res.ConnectionsFailed != 0 {
				t.Errorf("received %d of %d, %d extra, errors %q", res.FramesReceived, res.FramesDue, res.ExtraReplies, res.Errors)
			}
		})
	}
	for _, want := range []string{loadgen.ProtocolRaw, loadgen.ProtocolTwilio, "audiosocket"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not among the protocols run (%v)", want, names)
		}
	}
}

// TestL16Calls sends L16 at 16 and 24 kHz on the raw protocol, whose
// format goes in the URL, and on AudioSocket, whose frames' type says it:
// frames are 20 ms of the format, and so are the answers they are matched
// by.
func TestL16Calls(t *testing.T) {
	url, srv := newVoxhostServer(t, nil)
	tcp := serveStream(t, srv, transport.AudioSocket())
	for _, rate := range []int{16000, 24000} {
		for _, cfg := range []loadgen.Config{{URL: url, Protocol: loadgen.ProtocolRaw}, {TCPAddr: tcp, Protocol: "audiosocket"}} {
			cfg.Format, cfg.Calls, cfg.Duration, cfg.Ramp = codec.Format{Encoding: codec.L16, Rate: rate}, 2, 300*time.Millisecond, 40*time.Millisecond
			res, err := loadgen.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.FramesReceived != res.FramesDue || res.FramesDue != 30 || res.ExtraReplies != 0 || res.ConnectionsFailed != 0 {
				t.Errorf("%s at %d Hz: received %d of %d, %d extra, errors %q", cfg.Protocol, rate, res.FramesReceived, res.FramesDue, res.ExtraReplies, res.Errors)
			}
		}
	}
	_, err := loadgen.Run(context.Background(), loadgen.Config{URL: url, Protocol: loadgen.ProtocolTwilio, Format: codec.Format{Encoding: codec.L16, Rate: 16000}, Calls: 1})
	if err == nil || !strings.Contains(err.Error(), "the twilio dialect carries μ-law at 8000 Hz only") {
		t.Errorf("L16 on Twilio: %v", err)
	}
}
