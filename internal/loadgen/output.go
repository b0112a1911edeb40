package loadgen

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/voxhost/voxhost/host/codec"
)

// ms formats a duration in milliseconds with about three significant
// digits, as the table and saturation reasons show them.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// WriteTable writes the sweep as an aligned text table, one row per point,
// with the reasons for saturation, the connection errors and the stable
// maximum below it. Server columns show "-" when the server has no
// /metrics.
func (sr SweepResult) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s, ", sr.Protocol, sr.URL)
	if sr.Format != (codec.Format{}) {
		fmt.Fprintf(&b, "%s, ", sr.Format)
	}
	fmt.Fprintf(&b, "%d fps, %v of audio per call\n\n", sr.FPS, sr.Duration)
	if id := sr.Idle; id != nil {
		fmt.Fprintf(&b, "idle: %d connections (%d failed, %d dropped), connect p50 %s ms, p95 %s ms", id.Conns, id.Failed, id.Dropped, ms(id.ConnectP50), ms(id.ConnectP95))
		if id.HasServer {
			fmt.Fprintf(&b, "; held %v: server rss %s → %s MiB, %.1f KiB rss per connection", id.Hold, mib(id.RSSBefore), mib(id.RSSHeld), id.RSSPerConn/1024)
			if id.HeapPerConn != 0 {
				fmt.Fprintf(&b, ", %.1f KiB heap", id.HeapPerConn/1024)
			}
		}
		b.WriteString("\n")
		for _, e := range id.Errors {
			fmt.Fprintf(&b, "  idle error: %s\n", e)
		}
		b.WriteString("\n")
	}
	if len(sr.Points) > 0 {
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "calls\trep\tframes due\tsent\treceived\tfailed\tconn fail\tconnect p50\tp95\tp99 ms\t"+
			"rtt p50\tp90\tp99\tp99.9\tmax\tmean ms\tthroughput\tsrv rss MiB\tsrv cpu %\tsteady µs/frame\tgc max ms\tsaturated\t")
		for _, p := range sr.Points {
			srvRSS, srvCPU, perFrame, gcMax := "-", "-", "-", "-"
			if s := p.Server; s != nil {
				srvRSS, srvCPU, gcMax = mib(s.RSSDuring), fmt.Sprintf("%.0f", s.CPUPercent), ms(s.GCPauseMax)
				if s.SteadyFrames > 0 {
					perFrame = fmt.Sprintf("%.1f", float64(s.SteadyCPUPerFrame)/float64(time.Microsecond))
				}
			}
			sat := "no"
			if p.Saturated {
				sat = "YES"
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%s\t%s\t%s\t%s\t%s\t\n",
				p.Calls, p.Rep, p.FramesDue, p.FramesSent, p.FramesReceived, p.FramesFailed, p.ConnectionsFailed,
				ms(p.ConnectP50), ms(p.ConnectP95), ms(p.ConnectP99), ms(p.RTT.P50), ms(p.RTT.P90), ms(p.RTT.P99), ms(p.RTT.P999),
				ms(p.RTT.Max), ms(p.RTT.Mean), p.Throughput*100, srvRSS, srvCPU, perFrame, gcMax, sat)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		b.WriteString("\n")
		for _, p := range sr.Points {
			for _, why := range p.SaturationReasons {
				fmt.Fprintf(&b, "%d calls, rep %d: saturated: %s\n", p.Calls, p.Rep, why)
			}
			for _, e := range p.Errors {
				fmt.Fprintf(&b, "%d calls, rep %d: %s\n", p.Calls, p.Rep, e)
			}
			if p.ExtraReplies > 0 {
				fmt.Fprintf(&b, "%d calls, rep %d: %d frames of audio beyond the frames sent: the server sends audio of its own, and round trips are unreliable\n",
					p.Calls, p.Rep, p.ExtraReplies)
			}
			// A late sender means the generator, not the server, ran short of
			// CPU, and the round trips above say less about the server.
			if p.SendLag.P99 > 10*time.Millisecond {
				fmt.Fprintf(&b, "%d calls, rep %d: the generator sent late (p99 %s ms behind schedule): it is short of CPU itself\n",
					p.Calls, p.Rep, ms(p.SendLag.P99))
			}
		}
		for _, p := range sr.Points {
			if p.Server != nil && p.Server.GCPauseSource == metricGCSummary+`{quantile="1"}` {
				b.WriteString("gc max: the longest of the server's last 256 GC pauses at the end of the point (go_gc_duration_seconds);\n" +
					"  a server that exports go_sched_pauses_total_gc_seconds gets the longest during each point\n")
				break
			}
		}
		if sr.StableMax > 0 {
			fmt.Fprintf(&b, "stable maximum: %d calls (the largest count whose repetitions were all unsaturated)\n", sr.StableMax)
		} else {
			b.WriteString("stable maximum: none (every count saturated at least once)\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// The JSON document WriteJSON writes; its field names are the schema.
type (
	jsonSweep struct {
		URL            string      `json:"url"`
		Protocol       string      `json:"protocol"`
		Codec          string      `json:"codec,omitempty"`
		RateHz         int         `json:"rate_hz,omitempty"`
		FPS            int         `json:"fps"`
		DurationS      float64     `json:"duration_s"`
		Points         []jsonPoint `json:"points"`
		StableMaxCalls *int        `json:"stable_max_calls"`
		Idle           *jsonIdle   `json:"idle,omitempty"`
	}
	jsonPoint struct {
		Calls             int         `json:"calls"`
		Rep               int         `json:"rep"`
		ElapsedS          float64     `json:"elapsed_s"`
		FramesDue         int64       `json:"frames_due"`
		FramesSent        int64       `json:"frames_sent"`
		FramesReceived    int64       `json:"frames_received"`
		FramesFailed      int64       `json:"frames_failed"`
		ConnectionsFailed int         `json:"connections_failed"`
		ExtraReplies      int64       `json:"extra_replies"`
		MarksReturned     int64       `json:"marks_returned"`
		MarksDropped      int64       `json:"marks_dropped"`
		ConnectP50Ms      float64     `json:"connect_p50_ms"`
		ConnectP95Ms      float64     `json:"connect_p95_ms"`
		ConnectP99Ms      float64     `json:"connect_p99_ms"`
		RTTMs             jsonLatency `json:"rtt_ms"`
		SendLagMs         jsonLatency `json:"send_lag_ms"`
		Throughput        float64     `json:"throughput"`
		Saturated         bool        `json:"saturated"`
		SaturationReasons []string    `json:"saturation_reasons"`
		Errors            []string    `json:"errors"`
		Server            *jsonServer `json:"server"`
	}
	jsonLatency struct {
		P50  float64 `json:"p50"`
		P90  float64 `json:"p90"`
		P99  float64 `json:"p99"`
		P999 float64 `json:"p999"`
		Max  float64 `json:"max"`
		Mean float64 `json:"mean"`
	}
	jsonServer struct {
		RSSBeforeBytes    int64   `json:"rss_before_bytes"`
		RSSDuringBytes    int64   `json:"rss_during_bytes"`
		RSSAfterBytes     int64   `json:"rss_after_bytes"`
		CPUPercent        float64 `json:"cpu_percent"`
		ActiveCallsBefore int     `json:"active_calls_before"`
		ActiveCallsDuring int     `json:"active_calls_during"`
		ActiveCallsAfter  int     `json:"active_calls_after"`
		GCPauses          int64   `json:"gc_pauses"`
		GCPauseMaxMs      float64 `json:"gc_pause_max_ms"`
		GCPauseSource     string  `json:"gc_pause_source"`
		// Steady is the steady window's figures; absent when it had none.
		Steady  *jsonSteady `json:"steady,omitempty"`
		Missing []string    `json:"missing,omitempty"`
	}
	jsonSteady struct {
		CPUUsPerFrame float64 `json:"cpu_us_per_frame"`
		CPUPercent    float64 `json:"cpu_percent"`
		Frames        int64   `json:"frames"`
	}
	jsonIdle struct {
		Connections      int      `json:"connections"`
		Failed           int      `json:"failed"`
		Dropped          int      `json:"dropped"`
		ConnectP50Ms     float64  `json:"connect_p50_ms"`
		ConnectP95Ms     float64  `json:"connect_p95_ms"`
		HoldS            float64  `json:"hold_s"`
		RSSBeforeBytes   *int64   `json:"server_rss_before_bytes"`
		RSSHeldBytes     *int64   `json:"server_rss_held_bytes"`
		RSSPerConnBytes  *float64 `json:"server_rss_per_connection_bytes"`
		HeapPerConnBytes *float64 `json:"server_heap_per_connection_bytes"`
		ActiveCallsHeld  *int     `json:"server_active_calls_held"`
		Errors           []string `json:"errors"`
	}
)

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func latencyJSON(l Latency) jsonLatency {
	return jsonLatency{P50: msf(l.P50), P90: msf(l.P90), P99: msf(l.P99), P999: msf(l.P999), Max: msf(l.Max), Mean: msf(l.Mean)}
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// WriteJSON writes the sweep as one indented JSON document. Durations are
// in milliseconds (the suffix says so), stable_max_calls is null when every
// count saturated, and a point's server is null when the server has no
// /metrics.
func (sr SweepResult) WriteJSON(w io.Writer) error {
	doc := jsonSweep{URL: sr.URL, Protocol: sr.Protocol, FPS: sr.FPS, DurationS: sr.Duration.Seconds(), Points: []jsonPoint{}}
	if sr.Format != (codec.Format{}) {
		doc.Codec, doc.RateHz = sr.Format.Encoding.String(), sr.Format.Rate
	}
	if sr.StableMax > 0 {
		doc.StableMaxCalls = &sr.StableMax
	}
	for _, p := range sr.Points {
		jp := jsonPoint{
			Calls: p.Calls, Rep: p.Rep, ElapsedS: p.Elapsed.Seconds(),
			FramesDue: p.FramesDue, FramesSent: p.FramesSent, FramesReceived: p.FramesReceived, FramesFailed: p.FramesFailed,
			ConnectionsFailed: p.ConnectionsFailed, ExtraReplies: p.ExtraReplies,
			MarksReturned: p.MarksReturned, MarksDropped: p.MarksDropped, ConnectP50Ms: msf(p.ConnectP50), ConnectP95Ms: msf(p.ConnectP95),
			ConnectP99Ms: msf(p.ConnectP99), RTTMs: latencyJSON(p.RTT), SendLagMs: latencyJSON(p.SendLag), Throughput: p.Throughput,
			Saturated: p.Saturated, SaturationReasons: nonNil(p.SaturationReasons), Errors: nonNil(p.Errors),
		}
		if s := p.Server; s != nil {
			jp.Server = &jsonServer{
				RSSBeforeBytes: s.RSSBefore, RSSDuringBytes: s.RSSDuring, RSSAfterBytes: s.RSSAfter, CPUPercent: s.CPUPercent,
				ActiveCallsBefore: s.ActiveBefore, ActiveCallsDuring: s.ActiveDuring, ActiveCallsAfter: s.ActiveAfter,
				GCPauses: s.GCPauses, GCPauseMaxMs: msf(s.GCPauseMax), GCPauseSource: s.GCPauseSource, Missing: s.Missing,
			}
			if s.SteadyFrames > 0 {
				jp.Server.Steady = &jsonSteady{CPUUsPerFrame: float64(s.SteadyCPUPerFrame) / float64(time.Microsecond), CPUPercent: s.SteadyCPUPercent, Frames: s.SteadyFrames}
			}
		}
		doc.Points = append(doc.Points, jp)
	}
	if id := sr.Idle; id != nil {
		doc.Idle = &jsonIdle{Connections: id.Conns, Failed: id.Failed, Dropped: id.Dropped,
			ConnectP50Ms: msf(id.ConnectP50), ConnectP95Ms: msf(id.ConnectP95), HoldS: id.Hold.Seconds(), Errors: nonNil(id.Errors)}
		if id.HasServer {
			doc.Idle.RSSBeforeBytes, doc.Idle.RSSHeldBytes, doc.Idle.RSSPerConnBytes = &id.RSSBefore, &id.RSSHeld, &id.RSSPerConn
			doc.Idle.ActiveCallsHeld = &id.ActiveHeld
			if id.HeapPerConn != 0 {
				doc.Idle.HeapPerConnBytes = &id.HeapPerConn
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// WritePlot draws RTT p50, p99 and max against the call count to path; the
// extension picks the format (.svg, .png, .pdf). With several repetitions
// of a count, each line takes the worst of them. Both axes are logarithmic
// when the values span a decade, as a default sweep's counts and a
// saturating server's round trips do.
func (sr SweepResult) WritePlot(path string) error {
	counts := sr.countsOf()
	if len(counts) == 0 {
		return fmt.Errorf("loadgen: no points to plot")
	}
	worst := map[int]Latency{}
	for _, p := range sr.Points {
		w := worst[p.Calls]
		w.P50, w.P99, w.Max = max(w.P50, p.RTT.P50), max(w.P99, p.RTT.P99), max(w.Max, p.RTT.Max)
		worst[p.Calls] = w
	}
	series := []struct {
		name string
		of   func(Latency) time.Duration
		rgb  color.RGBA
	}{
		{"p50", func(l Latency) time.Duration { return l.P50 }, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
		{"p99", func(l Latency) time.Duration { return l.P99 }, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}},
		{"max", func(l Latency) time.Duration { return l.Max }, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("voxhost loadgen: %s, %d fps, %v per call", sr.Protocol, sr.FPS, sr.Duration)
	p.X.Label.Text = "concurrent calls"
	p.Y.Label.Text = "round trip (ms)"
	// A log axis cannot show 0; a round trip under a microsecond is below
	// the histogram's resolution anyway.
	const floorMs = 0.001
	lo, hi := 0.0, 0.0
	for _, s := range series {
		xys := make(plotter.XYs, len(counts))
		for i, n := range counts {
			y := max(msf(s.of(worst[n])), floorMs)
			xys[i] = plotter.XY{X: float64(n), Y: y}
			if lo == 0 || y < lo {
				lo = y
			}
			hi = max(hi, y)
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color, points.Color = s.rgb, s.rgb
		points.Shape = draw.CircleGlyph{}
		p.Add(line, points)
		p.Legend.Add(s.name, line, points)
	}
	if hi >= msf(MaxP99)/2 {
		limit := plotter.NewFunction(func(float64) float64 { return msf(MaxP99) })
		limit.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
		limit.Color = color.Gray{Y: 0x80}
		p.Add(limit)
		p.Legend.Add("p99 limit", limit)
		hi = max(hi, msf(MaxP99))
	}
	// Round trips grow with the load, so the lower right stays clear.
	p.Legend.XOffs, p.Legend.YOffs = -vg.Points(8), vg.Points(8)
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	if hi/lo >= 10 {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	first, last := float64(counts[0]), float64(counts[len(counts)-1])
	p.X.Min, p.X.Max = first/1.2, last*1.2
	p.X.Tick.Marker = countTicks(counts)
	if last/first >= 10 {
		p.X.Scale = plot.LogScale{}
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
}

// countTicks marks the x axis at the call counts swept, which a sweep
// picks to be read off, rather than at round numbers.
type countTicks []int

// Ticks implements plot.Ticker.
func (t countTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, n := range t {
		if v := float64(n); v >= lo && v <= hi {
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.Itoa(n)})
		}
	}
	return ticks
}
