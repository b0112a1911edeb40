package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

func near(got, want, tol time.Duration) bool { return got >= want-tol && got <= want+tol }

func TestHistogramPercentiles(t *testing.T) {
	h := newHistogram()
	for i := 1; i <= 1000; i++ {
		record(h, time.Duration(i)*time.Millisecond)
	}
	l := summarize(h)
	// 3 significant digits: every value reads back within 0.1%.
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"p50", l.P50, 500 * time.Millisecond},
		{"p90", l.P90, 900 * time.Millisecond},
		{"p99", l.P99, 990 * time.Millisecond},
		{"p99.9", l.P999, 999 * time.Millisecond},
		{"max", l.Max, 1000 * time.Millisecond},
		{"mean", l.Mean, 500500 * time.Microsecond},
	} {
		if !near(c.got, c.want, c.want/1000) {
			t.Errorf("%s = %v, want %v within 0.1%%", c.name, c.got, c.want)
		}
	}
	if l.Count != 1000 {
		t.Errorf("count = %d", l.Count)
	}
	// Out of range values are clamped, not dropped.
	record(h, 0)
	record(h, time.Hour)
	if l := summarize(h); l.Count != 1002 || l.Max < 59*time.Second {
		t.Errorf("clamping: count %d, max %v", l.Count, l.Max)
	}
}

func TestConnectPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 20; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p50, p95 := percentile(ds, 50), percentile(ds, 95); p50 != 10*time.Millisecond || p95 != 19*time.Millisecond {
		t.Fatalf("p50 %v p95 %v, want 10ms and 19ms (nearest rank)", p50, p95)
	}
	if percentile(nil, 50) != 0 {
		t.Fatal("no values: want 0")
	}
}

// TestPerFrameBookkeepingAllocatesNothing covers what runs for every frame
// besides the socket: stamping a send, rendering the frame and decoding a
// reply in the protocol's client role, matching the reply, recording both.
func TestPerFrameBookkeepingAllocatesNothing(t *testing.T) {
	d, _ := transport.LookupDialect(ProtocolTwilio)
	sess := d.NewBotSession(transport.BotConfig{Format: codec.Telephony, MaxAudio: maxReplyAudio(codec.Telephony), Call: callInfo(Config{}, 1, 2)})
	reply := []byte(`{"event":"media","streamSid":"MZ1","media":{"payload":"AAAA"}}`)
	frame := speechFrame(codec.Telephony)
	var in transport.Inbound
	fl := newFlight(100000, 20*time.Millisecond)
	s := newShard()
	now := time.Duration(0)
	allocs := testing.AllocsPerRun(10000, func() {
		now += 20 * time.Millisecond
		fl.send(now)
		s.recordLag(time.Millisecond)
		rtt, ok := fl.reply(now + 3*time.Millisecond)
		if !ok {
			t.Fatal("reply without a frame")
		}
		s.recordRTT(rtt)
		if err := sess.Decode(transport.Text, reply, &in); err != nil || len(in.Audio) != 3 {
			t.Fatal("media reply not recognized", err)
		}
		if _, msg := sess.Audio(frame); len(msg) == 0 {
			t.Fatal("no media message")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame, want 0", allocs)
	}
	if l := summarize(s.rtt); !near(l.P50, 3*time.Millisecond, 3*time.Microsecond) {
		t.Fatalf("rtt p50 %v, want 3ms", l.P50)
	}
}

func TestFlightFallsBackToTheScheduleWhenOverrun(t *testing.T) {
	const period = 20 * time.Millisecond
	fl := newFlight(5000, period)
	fl.first = time.Second
	if len(fl.stamps) != maxRing {
		t.Fatalf("ring of %d, want %d", len(fl.stamps), maxRing)
	}
	if _, ok := fl.reply(0); ok {
		t.Fatal("a reply before any frame matched one")
	}
	// The server answers nothing while 1500 frames go out, each 1 ms late.
	for k := range 1500 {
		fl.send(fl.first + time.Duration(k)*period + time.Millisecond)
	}
	now := fl.first + 1500*period
	rtt, _ := fl.reply(now) // frame 0's stamp was overwritten: schedule time
	if want := 1500 * period; rtt != want {
		t.Fatalf("overrun frame 0: rtt %v, want %v", rtt, want)
	}
	// Frame 1500-maxRing's slot is the next to go: while the sender may be
	// writing it, the receiver cannot trust it either.
	for range 1500 - maxRing {
		fl.reply(now)
	}
	k := int64(1500 - maxRing + 1) // the oldest frame whose stamp is safe
	rtt, _ = fl.reply(now)
	if want := now - (fl.first + time.Duration(k)*period + time.Millisecond); rtt != want {
		t.Fatalf("frame %d: rtt %v, want %v from its stamp", k, rtt, want)
	}
}

func TestConfigURLs(t *testing.T) {
	for _, c := range []struct {
		cfg           Config
		call, metrics string
	}{
		{Config{URL: "ws://h:1"}, "ws://h:1/ws", "http://h:1/metrics"},
		{Config{URL: "ws://h:1/", Protocol: ProtocolTwilio, Pipeline: "bot"}, "ws://h:1/twilio", "http://h:1/metrics"},
		{Config{URL: "wss://h/ws", Pipeline: "a b"}, "wss://h/ws?pipeline=a+b", "https://h/metrics"},
		{Config{URL: "ws://h:1/custom?x=1", MetricsURL: "-"}, "ws://h:1/custom?x=1", ""},
		{Config{URL: "ws://h:1", TCPAddr: "h:9092"}, "ws://h:1/ws", "http://h:1/metrics"}, // a WebSocket protocol ignores it
		{Config{URL: "ws://h:1", Protocol: "raw", Format: codec.Format{Encoding: codec.L16, Rate: 16000}}, "ws://h:1/ws?codec=l16&rate=16000", "http://h:1/metrics"},
		{Config{TCPAddr: "h:9092", Protocol: "audiosocket"}, "h:9092", ""},
		{Config{URL: "ws://h:1", TCPAddr: "h:9092", Protocol: "audiosocket"}, "h:9092", "http://h:1/metrics"},
	} {
		cfg, err := c.cfg.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		call, _ := cfg.callURL()
		metrics, _ := cfg.metricsURL()
		if call != c.call || metrics != c.metrics {
			t.Errorf("%+v: call %q metrics %q, want %q %q", c.cfg, call, metrics, c.call, c.metrics)
		}
	}
	for _, bad := range []Config{{}, {URL: "http://h"}, {URL: "ws://h", Protocol: "sip"}, {URL: "ws://h", Duration: time.Millisecond},
		{URL: "ws://h", Protocol: "audiosocket"}, {TCPAddr: "h", Protocol: "audiosocket"}, {URL: "ws://h", Protocol: "openai-realtime"},
		{URL: "ws://h", Protocol: "twilio", Format: codec.Format{Encoding: codec.L16, Rate: 16000}}} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestSaturationRules(t *testing.T) {
	healthy := Result{Calls: 100, FramesDue: 10000, FramesReceived: 10000, Throughput: 1,
		RTT: Latency{P50: time.Millisecond, P99: 5 * time.Millisecond, P999: 9 * time.Millisecond}}
	for _, c := range []struct {
		name   string
		change func(*Result)
		reason string // a substring of the only reason; "" for none
	}{
		{"healthy", func(*Result) {}, ""},
		{"p99 at the limit", func(r *Result) { r.RTT.P99 = MaxP99 }, ""},
		{"p99", func(r *Result) { r.RTT.P99 = 1001 * time.Millisecond }, "rtt p99 1001 ms > 1000 ms"},
		{"p99.9", func(r *Result) { r.RTT.P999 = 2500 * time.Millisecond }, "rtt p99.9 2500 ms"},
		{"one connection in 100", func(r *Result) { r.ConnectionsFailed = 1 }, ""},
		{"two connections in 100", func(r *Result) { r.ConnectionsFailed = 2 }, "2.0% of connections failed"},
		{"frames", func(r *Result) { r.FramesFailed, r.FramesReceived, r.Throughput = 200, 9800, 0.98 }, "2.0% of frames failed"},
		{"throughput only", func(r *Result) { r.Throughput = 0.94 }, "throughput 94.0% < 95%"},
	} {
		r := healthy
		c.change(&r)
		r.judge()
		switch {
		case c.reason == "" && r.Saturated:
			t.Errorf("%s: saturated: %v", c.name, r.SaturationReasons)
		case c.reason != "" && (!r.Saturated || len(r.SaturationReasons) != 1 || !strings.Contains(r.SaturationReasons[0], c.reason)):
			t.Errorf("%s: saturated %v %q, want one reason with %q", c.name, r.Saturated, r.SaturationReasons, c.reason)
		}
	}
	r := Result{Calls: 10, FramesDue: 100, FramesFailed: 100, ConnectionsFailed: 10,
		RTT: Latency{P99: 3 * time.Second, P999: 3 * time.Second}}
	r.judge()
	if len(r.SaturationReasons) != 5 {
		t.Errorf("everything wrong: %q, want all 5 reasons", r.SaturationReasons)
	}
}

func TestStableMax(t *testing.T) {
	pt := func(calls int, sat bool) Result { return Result{Calls: calls, Saturated: sat} }
	for _, c := range []struct {
		points []Result
		want   int
	}{
		{[]Result{pt(10, false), pt(10, false), pt(50, false), pt(50, true), pt(100, true)}, 10},
		{[]Result{pt(10, false), pt(50, false), pt(100, false)}, 100},
		{[]Result{pt(10, true), pt(50, false)}, 50},
		{[]Result{pt(10, true)}, 0},
	} {
		if got := (SweepResult{Points: c.points}).finish().StableMax; got != c.want {
			t.Errorf("%v: stable max %d, want %d", c.points, got, c.want)
		}
	}
}

func TestParseCounts(t *testing.T) {
	got, err := ParseCounts("10, 25,50")
	if err != nil || len(got) != 3 || got[0] != 10 || got[2] != 50 {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"", "10,,20", "0", "-5", "ten"} {
		if _, err := ParseCounts(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// sampleSweep is a sweep with every kind of field filled in.
func sampleSweep() SweepResult {
	ok := Result{Calls: 10, Rep: 1, Elapsed: 3 * time.Second, FramesDue: 500, FramesSent: 500, FramesReceived: 500, Throughput: 1,
		ConnectP50: 2 * time.Millisecond, ConnectP95: 4 * time.Millisecond, ConnectP99: 7 * time.Millisecond,
		RTT: Latency{Count: 500, P50: 300 * time.Microsecond, P90: 400 * time.Microsecond, P99: time.Millisecond,
			P999: 2 * time.Millisecond, Max: 3 * time.Millisecond, Mean: 350 * time.Microsecond},
		Server: &ServerStats{RSSBefore: 30 << 20, RSSDuring: 40 << 20, RSSAfter: 35 << 20, CPUPercent: 12.5,
			ActiveDuring: 10, GCPauses: 3, GCPauseMax: 250 * time.Microsecond, GCPauseSource: metricGCSummary + `{quantile="1"}`}}
	bad := Result{Calls: 50, Rep: 1, FramesDue: 2500, FramesSent: 2400, FramesReceived: 1000, FramesFailed: 1500,
		ConnectionsFailed: 2, Throughput: 0.4, RTT: Latency{P50: 800 * time.Millisecond, P99: 1500 * time.Millisecond,
			P999: 1600 * time.Millisecond, Max: 1700 * time.Millisecond},
		Errors: []string{"2× connect: HTTP 503"}}
	bad.judge()
	sr := SweepResult{URL: "ws://h:1", Protocol: ProtocolRaw, Format: codec.Telephony, FPS: 50, Duration: time.Second, Points: []Result{ok, bad},
		Idle: &IdleResult{Conns: 5, ConnectP50: time.Millisecond, Hold: time.Second, HasServer: true,
			RSSBefore: 30 << 20, RSSHeld: 31 << 20, RSSPerConn: 200 << 10}}
	return sr.finish()
}

func TestWriteJSONSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleSweep().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	for key, want := range map[string]any{"url": "ws://h:1", "protocol": "raw", "codec": "mulaw", "rate_hz": 8000.0, "fps": 50.0, "duration_s": 1.0, "stable_max_calls": 10.0} {
		if doc[key] != want {
			t.Errorf("%s = %#v, want %#v", key, doc[key], want)
		}
	}
	points, _ := doc["points"].([]any)
	if len(points) != 2 {
		t.Fatalf("points: %#v", doc["points"])
	}
	p0, p1 := points[0].(map[string]any), points[1].(map[string]any)
	for _, key := range []string{"calls", "rep", "frames_due", "frames_sent", "frames_received", "frames_failed",
		"connections_failed", "extra_replies", "connect_p50_ms", "connect_p95_ms", "throughput"} {
		if _, ok := p0[key].(float64); !ok {
			t.Errorf("points[0].%s = %#v, want a number", key, p0[key])
		}
	}
	if p0["connect_p99_ms"] != 7.0 {
		t.Errorf("points[0].connect_p99_ms = %#v, want 7", p0["connect_p99_ms"])
	}
	rtt, _ := p0["rtt_ms"].(map[string]any)
	for key, want := range map[string]float64{"p50": 0.3, "p90": 0.4, "p99": 1, "p999": 2, "max": 3, "mean": 0.35} {
		if got, _ := rtt[key].(float64); math.Abs(got-want) > 1e-9 {
			t.Errorf("rtt_ms.%s = %#v, want %v", key, rtt[key], want)
		}
	}
	if p0["saturated"] != false || len(p0["saturation_reasons"].([]any)) != 0 {
		t.Errorf("point 0: saturated %v, reasons %#v", p0["saturated"], p0["saturation_reasons"])
	}
	if p1["saturated"] != true || len(p1["saturation_reasons"].([]any)) == 0 {
		t.Errorf("point 1: saturated %v, reasons %#v", p1["saturated"], p1["saturation_reasons"])
	}
	srv, _ := p0["server"].(map[string]any)
	if srv["rss_during_bytes"] != float64(40<<20) || srv["cpu_percent"] != 12.5 || srv["gc_pause_max_ms"] != 0.25 || srv["active_calls_during"] != 10.0 {
		t.Errorf("server: %#v", srv)
	}
	if v, ok := p1["server"]; !ok || v != nil {
		t.Errorf("a point without server stats: server = %#v, want null", v)
	}
	idle, _ := doc["idle"].(map[string]any)
	if idle["connections"] != 5.0 || idle["server_rss_per_connection_bytes"] != float64(200<<10) {
		t.Errorf("idle: %#v", idle)
	}
}

func TestWriteTableAndPlot(t *testing.T) {
	sr := sampleSweep()
	var buf bytes.Buffer
	if err := sr.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"raw ws://h:1, 8 kHz μ-law, 50 fps", "calls", "p99 ms", "rtt p50", "p99.9", "srv rss MiB", "40.0", "YES", "50 calls, rep 1: saturated: rtt p99 1500 ms",
		"2× connect: HTTP 503", "stable maximum: 10 calls", "gc max: the longest of the server's last 256", "idle: 5 connections", "200.0 KiB rss per connection"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	path := filepath.Join(t.TempDir(), "rtt.svg")
	if err := sr.WritePlot(path); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("p99")) {
		t.Fatalf("plot: %v, %d bytes", err, len(svg))
	}
}

// TestOpenLoopThroughAStall runs calls against a server that stops
// answering for 500 ms: the frames keep going out at full rate, the
// server reads them on time, and the stalled replies show as round trips
// of up to half a second, not as a slower sender.
func TestOpenLoopThroughAStall(t *testing.T) {
	const calls, fps, stall = 10, 50, 500 * time.Millisecond
	srv := newEchoServer(t, 0, time.Second, stall)
	res, err := Run(context.Background(), Config{URL: srv.url, Calls: calls, FPS: fps, Duration: 2 * time.Second,
		Ramp: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	due := int64(calls * fps * 2)
	if res.FramesDue != due || res.FramesSent != due {
		t.Errorf("frames due %d, sent %d; want %d of each", res.FramesDue, res.FramesSent, due)
	}
	// A closed-loop sender would send nothing while the replies stall (a
	// frame a call at most); an open loop sends the stall's share of the
	// frames, give or take what a busy machine delays or catches up.
	inStall, want := srv.inStall.Load(), int64(calls*fps)*int64(stall)/int64(time.Second)
	if inStall < want/2 || inStall > want*3/2 {
		t.Errorf("the server read %d frames during the stall, want about %d", inStall, want)
	}
	if res.FramesReceived != due || res.ConnectionsFailed != 0 {
		t.Errorf("received %d of %d, %d connections failed: %v", res.FramesReceived, due, res.ConnectionsFailed, res.Errors)
	}
	// The first frame of the stall waits it out; a busy machine adds to
	// that, never takes from it.
	if res.RTT.Max < stall*8/10 || res.RTT.Max > stall+time.Second {
		t.Errorf("rtt max %v, want about the %v stall", res.RTT.Max, stall)
	}
	if res.RTT.P50 > stall/2 {
		t.Errorf("rtt p50 %v: most frames were not stalled", res.RTT.P50)
	}
	if res.Server != nil {
		t.Errorf("server stats from a server without /metrics: %+v", res.Server)
	}
}

func TestRTTOfADelayingServer(t *testing.T) {
	const delay = 30 * time.Millisecond
	srv := newEchoServer(t, delay, 0, 0)
	for _, proto := range []string{ProtocolRaw, ProtocolTwilio} {
		t.Run(proto, func(t *testing.T) {
			res, err := Run(context.Background(), Config{URL: srv.url, Protocol: proto, Calls: 10, Duration: 1500 * time.Millisecond,
				Ramp: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if res.FramesReceived != res.FramesDue || res.Saturated {
				t.Errorf("received %d of %d, saturated %v %v", res.FramesReceived, res.FramesDue, res.Saturated, res.SaturationReasons)
			}
			// No reply comes back before the server's delay, and the
			// fastest comes back right after it: a reply counted against
			// another frame would be a frame (20 ms) off. The fastest, not
			// the median: on a busy machine most round trips also wait
			// for a core (p50 47 ms was seen), which is not the loadgen's
			// to measure away.
			if res.RTT.Min < delay || res.RTT.P50 < delay || res.RTT.Min > delay+8*time.Millisecond {
				t.Errorf("rtt min %v p50 %v, want at least %v and a min of about that", res.RTT.Min, res.RTT.P50, delay)
			}
			if res.RTT.Count != res.FramesDue || res.ExtraReplies != 0 {
				t.Errorf("%d round trips recorded for %d frames: the server's other messages were counted", res.RTT.Count, res.FramesDue)
			}
		})
	}
}

// TestAnswersCutDifferently runs calls against a server that answers in
// messages of other sizes than the frames sent, as a relay's playout does:
// half frames, and two frames at a time. Each frame is answered by its
// length of audio, so every frame is matched once and none is extra.
func TestAnswersCutDifferently(t *testing.T) {
	for _, chunk := range []int{FrameBytes / 2, 2 * FrameBytes} {
		srv := newEchoServer(t, 0, 0, 0)
		srv.chunk = chunk
		for _, proto := range []string{ProtocolRaw, ProtocolTwilio} {
			t.Run(fmt.Sprintf("%s in %d-byte messages", proto, chunk), func(t *testing.T) {
				res, err := Run(context.Background(), Config{URL: srv.url, Protocol: proto, Calls: 4, Duration: 400 * time.Millisecond,
					Ramp: 100 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				if res.FramesReceived != res.FramesDue || res.RTT.Count != res.FramesDue || res.ExtraReplies != 0 {
					t.Errorf("received %d of %d, %d round trips, %d extra", res.FramesReceived, res.FramesDue, res.RTT.Count, res.ExtraReplies)
				}
				// The first frame of each pair waits a period for the second,
				// which is answered at once: a mean of about half a period.
				if chunk > FrameBytes && res.RTT.Mean < 5*time.Millisecond {
					t.Errorf("rtt mean %v: the first frame of each pair was answered before its pair arrived", res.RTT.Mean)
				}
			})
		}
	}
}

func TestUnreachableServer(t *testing.T) {
	res, err := Run(context.Background(), Config{URL: "ws://127.0.0.1:1", Calls: 3, Duration: 100 * time.Millisecond, Ramp: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ConnectionsFailed != 3 || res.FramesFailed != res.FramesDue || !res.Saturated || len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0], "3× connect:") {
		t.Fatalf("%+v", res)
	}
}

func TestSweepAgainstEcho(t *testing.T) {
	srv := newEchoServer(t, 0, 0, 0)
	var progress bytes.Buffer
	sr, err := Sweep(context.Background(), Config{URL: srv.url, Duration: 300 * time.Millisecond, Ramp: 50 * time.Millisecond},
		[]int{2, 5}, 2, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Points) != 4 || sr.Points[1].Calls != 2 || sr.Points[1].Rep != 2 || sr.Points[2].Calls != 5 || sr.Points[2].Rep != 1 {
		t.Fatalf("points: %+v", sr.Points)
	}
	if sr.StableMax != 5 {
		t.Errorf("stable max %d, want 5", sr.StableMax)
	}
	if progress.Len() == 0 {
		t.Error("no progress drawn")
	}
}

func TestCancelStopsARun(t *testing.T) {
	srv := newEchoServer(t, 0, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, Config{URL: srv.url, Calls: 5, Duration: 10 * time.Second, Ramp: 10 * time.Millisecond})
	if err != context.DeadlineExceeded {
		t.Fatalf("err %v, want the deadline", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("cancelled run took %v", time.Since(start))
	}
}

func TestServerStats(t *testing.T) {
	bucket := func(le float64, n uint64) *dto.Bucket { return &dto.Bucket{UpperBound: &le, CumulativeCount: &n} }
	t0 := time.Now()
	before := &sample{at: t0, rss: 10 << 20, cpu: 1, activeCalls: 0, heap: math.NaN(), gcCount: 5, gcMax: 0.002,
		gcBuckets: []*dto.Bucket{bucket(0.0001, 3), bucket(0.001, 5), bucket(0.01, 5), bucket(math.Inf(1), 5)}}
	during := &sample{at: t0.Add(time.Second), rss: 30 << 20, cpu: 1.5, activeCalls: 50}
	after := &sample{at: t0.Add(2 * time.Second), rss: 20 << 20, cpu: 2, activeCalls: 0, gcCount: 8, gcMax: 0.002,
		gcBuckets: []*dto.Bucket{bucket(0.0001, 4), bucket(0.001, 7), bucket(0.01, 7), bucket(math.Inf(1), 7)}}
	st := serverStats(before, during, after)
	// Of the 3 new pauses, one was under 100 µs and two under 1 ms.
	if st.RSSDuring != 30<<20 || st.ActiveDuring != 50 || math.Abs(st.CPUPercent-50) > 1e-9 || st.GCPauses != 3 ||
		st.GCPauseMax != time.Millisecond || st.GCPauseSource != "histogram" || len(st.Missing) != 0 {
		t.Errorf("with a pause histogram: %+v", *st)
	}
	before.gcBuckets, after.gcBuckets, after.rss = nil, nil, math.NaN()
	st = serverStats(before, during, after)
	if st.GCPauseMax != 2*time.Millisecond || !strings.HasPrefix(st.GCPauseSource, metricGCSummary) ||
		st.RSSDuring != 0 || len(st.Missing) != 1 || st.Missing[0] != metricRSS {
		t.Errorf("without: %+v", *st)
	}
	if serverStats(nil, during, after) != nil {
		t.Error("stats without a reading before the point")
	}
}

// TestPhasesOfEveryFirstCallsAreSpread checks that the frames of the first n
// calls of a run — the ones a host admits from a surge — are spread over
// the period, for every n, not only those of all the calls.
func TestPhasesOfEveryFirstCallsAreSpread(t *testing.T) {
	const calls = 1440
	r := &runner{period: 20 * time.Millisecond, calls: make([]*call, calls)}
	for _, n := range []int{2, 10, 100, 425, calls} {
		phases := make([]time.Duration, n)
		for i := range phases {
			phases[i] = r.phase(i)
			if phases[i] < 0 || phases[i] >= r.period {
				t.Fatalf("phase(%d) = %v, outside [0, %v)", i, phases[i], r.period)
			}
		}
		slices.Sort(phases)
		widest := phases[0] + r.period - phases[n-1] // the gap around the period's end
		for i := 1; i < n; i++ {
			widest = max(widest, phases[i]-phases[i-1])
		}
		// The golden ratio's points leave gaps of at most φ²/n of the
		// period (the three-distance theorem); phases i/calls of the
		// period would leave one of (calls-n+1)/calls.
		if limit := r.period * 27 / 10 / time.Duration(n); widest > limit {
			t.Errorf("first %d calls: widest gap between phases %v, want ≤ %v", n, widest, limit)
		}
	}
}

func TestSteadyFigures(t *testing.T) {
	t0 := time.Now()
	st := &ServerStats{}
	// 0.5 s of CPU over 2 s for 10,000 frames: 50 µs a frame, 25% of a core.
	st.addSteady(&steadyReading{from: &sample{at: t0, cpu: 1}, to: &sample{at: t0.Add(2 * time.Second), cpu: 1.5}, frames: 10000})
	if st.SteadyCPUPerFrame != 50*time.Microsecond || math.Abs(st.SteadyCPUPercent-25) > 1e-9 || st.SteadyFrames != 10000 {
		t.Errorf("steady figures %v, %v%%, %d frames", st.SteadyCPUPerFrame, st.SteadyCPUPercent, st.SteadyFrames)
	}
	for _, r := range []*steadyReading{nil, {from: &sample{at: t0, cpu: math.NaN()}, to: &sample{at: t0.Add(time.Second), cpu: 1}, frames: 10}} {
		st := &ServerStats{}
		st.addSteady(r)
		if st.SteadyFrames != 0 || st.SteadyCPUPerFrame != 0 {
			t.Errorf("from %+v: steady figures %+v", r, *st)
		}
	}
	var none *ServerStats
	none.addSteady(&steadyReading{from: &sample{}, to: &sample{}, frames: 1}) // a server without /metrics
}
