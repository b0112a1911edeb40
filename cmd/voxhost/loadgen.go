package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/loadgen"
)

// loadgenProtocols names the protocols loadgen can speak: those registered
// with both roles.
func loadgenProtocols() []string {
	var names []string
	for _, p := range transport.Protocols() {
		if _, err := transport.LookupDialect(p.Name()); err == nil {
			names = append(names, p.Name())
		}
	}
	return names
}

func loadgenCommand() *cli.Command {
	counts := make([]string, len(loadgen.DefaultCounts))
	for i, n := range loadgen.DefaultCounts {
		counts[i] = strconv.Itoa(n)
	}
	return &cli.Command{
		Name:  "loadgen",
		Usage: "measure how many concurrent calls a server carries: open-loop calls, round trips, saturation",
		Description: `Each call sends a 20 ms frame (160 bytes of μ-law) every 1/fps s on its own schedule, whatever
   the replies do, and times the frame's answer: as much audio coming back, in one reply or several, as a
   relay route's playout cuts and paces a bot's audio (--pipeline names the route; voxhost bench bot
   --mode echo is a bot). A call speaks --protocol as its carrier does, through the protocol's
   client role: ` + strings.Join(loadgenProtocols(), ", ") + `, and sip.
   --protocol sip places SIP calls (INVITE, RTP at the frame rate, BYE) to --sip-addr, the server's
   sip.listen, from a trunk source the server allows; the connect time is the INVITE's set-up time.
   Where the carrier returns marks (Twilio) the host's marks go back once the audio before them has
   played. A protocol over TCP (audiosocket) dials --tcp-addr, the server's audiosocket.listen; --url
   then only says where /metrics is. A point is saturated when RTT p99 > 1 s,
   p99.9 > 2 s, more than 1% of connections or frames fail, or throughput is under 95%.
   Server memory, CPU and GC pauses come from /metrics on the same host and port.
   Example: voxhost loadgen --url ws://localhost:8080 --sweep ` + strings.Join(counts, ",") + ` --plot rtt.svg`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "server address, ws:// or wss://; without a path, the protocol's endpoint (/ws, /twilio, …)"},
			&cli.StringFlag{Name: "sip-addr", Usage: "ip:port of the server's sip.listen, for --protocol sip; the others ignore it"},
			&cli.StringFlag{Name: "tcp-addr", Usage: "host:port of the server's listener for a protocol over TCP (audiosocket); the others ignore it"},
			&cli.StringFlag{Name: "protocol", Usage: strings.Join(loadgenProtocols(), ", "), Value: loadgen.DefaultProtocol},
			&cli.StringFlag{Name: "codec", Usage: "audio the calls send: mulaw, alaw or l16 (default: the protocol's first of mulaw, l16, alaw)"},
			&cli.IntFlag{Name: "rate", Usage: "sample rate with --codec l16: 8000, 16000 or 24000"},
			&cli.StringFlag{Name: "pipeline", Usage: "pipeline (route) each call asks for (raw: ?pipeline=, others: the start message's custom parameters)"},
			&cli.StringFlag{Name: "token", Usage: "bearer token sent with every connection"},
			&cli.StringFlag{Name: "metrics-url", Usage: `where server stats are read (default http://HOST:PORT/metrics of --url; "-" for none)`},
			&cli.IntFlag{Name: "calls", Usage: "concurrent calls of a single point", Value: 10},
			&cli.StringFlag{Name: "sweep", Usage: "comma-separated call counts, one point each, e.g. " + strings.Join(counts, ",")},
			&cli.IntFlag{Name: "reps", Usage: "repetitions of each point", Value: 1},
			&cli.DurationFlag{Name: "duration", Usage: "audio each call sends", Value: loadgen.DefaultDuration},
			&cli.IntFlag{Name: "fps", Usage: "frames per second per call (50 = real time)", Value: loadgen.DefaultFPS},
			&cli.DurationFlag{Name: "ramp", Usage: "call starts are spread over this long", Value: loadgen.DefaultRamp},
			&cli.IntFlag{Name: "idle", Usage: "first open this many connections without audio and report their cost"},
			&cli.DurationFlag{Name: "idle-hold", Usage: "how long --idle holds its connections (keep ramp+hold under the server's idle_timeout)", Value: loadgen.DefaultIdleHold},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON document instead of the table"},
			&cli.StringFlag{Name: "plot", Usage: "draw RTT p50/p99/max against calls to this file (.svg, .png or .pdf)"},
		},
		Action: func(c *cli.Context) error {
			var format codec.Format
			if c.IsSet("codec") || c.IsSet("rate") {
				var err error
				if format, err = codec.ParseFormat(c.String("codec"), c.Int("rate")); err != nil {
					return err
				}
			}
			cfg := loadgen.Config{
				URL: c.String("url"), TCPAddr: c.String("tcp-addr"), SIPAddr: c.String("sip-addr"), Protocol: c.String("protocol"), Format: format,
				Pipeline: c.String("pipeline"), Token: c.String("token"),
				MetricsURL: c.String("metrics-url"), Duration: c.Duration("duration"), FPS: c.Int("fps"), Ramp: c.Duration("ramp"),
				IdleHold: c.Duration("idle-hold"),
			}
			var counts []int
			switch {
			case c.IsSet("sweep") && c.IsSet("calls"):
				return errors.New("--calls and --sweep: give one")
			case c.IsSet("sweep"):
				var err error
				if counts, err = loadgen.ParseCounts(c.String("sweep")); err != nil {
					return err
				}
			case c.IsSet("calls") || !c.IsSet("idle"):
				if c.Int("calls") <= 0 {
					return fmt.Errorf("--calls %d: want at least 1", c.Int("calls"))
				}
				counts = []int{c.Int("calls")}
			}
			sr := loadgen.SweepResult{URL: cfg.Target(), Protocol: cfg.Protocol, FPS: cfg.FPS, Duration: cfg.Duration}
			var runErr error
			if n := c.Int("idle"); n > 0 {
				idle, err := loadgen.Idle(c.Context, cfg, n)
				if err != nil && c.Context.Err() == nil {
					return err
				}
				sr.Idle, runErr = &idle, err
			}
			if len(counts) > 0 && runErr == nil {
				var progress io.Writer
				if term.IsTerminal(int(os.Stderr.Fd())) {
					progress = os.Stderr
				}
				idle := sr.Idle
				sr, runErr = loadgen.Sweep(c.Context, cfg, counts, c.Int("reps"), progress)
				if runErr != nil && c.Context.Err() == nil {
					return runErr
				}
				sr.Idle = idle
			}
			// An interrupted run still reports the points it finished.
			var err error
			if c.Bool("json") {
				err = sr.WriteJSON(os.Stdout)
			} else {
				err = sr.WriteTable(os.Stdout)
			}
			if path := c.String("plot"); path != "" && err == nil && len(sr.Points) > 0 {
				err = sr.WritePlot(path)
			}
			return errors.Join(runErr, err)
		},
	}
}
