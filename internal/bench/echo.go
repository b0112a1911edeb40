package bench

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// EchoHandler is the bare baseline server: a coder/websocket echo with no
// codec, no pipeline and no protocol, reading into a reused buffer the way
// voxhost's call loop does. voxhost's capacity is reported as a ratio of
// this server's on the same machine in the same run.
//
// GET /metrics serves the series the load generator reads from voxhost
// (process memory and CPU, the GC pause and scheduling latency histograms,
// and the live connections as voxhost_active_calls), so that the floor,
// the echo's own memory per connection, GC pauses and waits for a core, is
// measured the same way as voxhost's. A scrape is the only work they add,
// and the load generator makes five per point.
func EchoHandler(maxMessage int) http.Handler {
	reg := prometheus.NewRegistry()
	active := prometheus.NewGauge(prometheus.GaugeOpts{Name: "voxhost_active_calls", Help: "Open echo connections."})
	reg.MustRegister(active,
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/sched/(pauses/total/gc|latencies):seconds$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		active.Inc()
		defer active.Dec()
		conn.SetReadLimit(int64(maxMessage))
		buf := make([]byte, maxMessage)
		ctx := context.Background()
		for {
			typ, rd, err := conn.Reader(ctx)
			if err != nil {
				return
			}
			n := 0
			for {
				m, err := rd.Read(buf[n:])
				n += m
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return
				}
			}
			if err := conn.Write(ctx, typ, buf[:n]); err != nil {
				return
			}
		}
	})
	return mux
}
