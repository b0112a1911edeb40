package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/botsim"
)

func benchBotCommand() *cli.Command {
	return &cli.Command{
		Name:  "bot",
		Usage: "serve a simulated voice bot for relay routes to dial: echo what it hears, or speak a WAV",
		Description: `The bot side of the twilio, raw and openai-realtime dialects. In echo mode it sends every
   audio frame back after --delay, which is what a load test through a relay route measures; in
   speak mode it sends --wav when the stream starts, then a mark named after the file.
   Put the printed URL in a route's upstream.url. Example:
   voxhost bench bot --protocol raw --mode echo    # upstream: {url: ws://127.0.0.1:8090/, protocol: raw}`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Aliases: []string{"addr"}, Value: "127.0.0.1:8090", Usage: "listen address"},
			&cli.StringFlag{Name: "protocol", Usage: "serve one dialect on every path: " + strings.Join(botsim.Protocols, ", ") + " (default: each on its path, /twilio, /raw, /openai)"},
			&cli.StringFlag{Name: "mode", Value: "echo", Usage: "echo (send back what arrives) or speak (send --wav at the start)"},
			&cli.DurationFlag{Name: "delay", Usage: "echo: how long each frame is held before it goes back"},
			&cli.StringFlag{Name: "wav", Usage: "speak: the recording (.wav, any rate, mono PCM16; default 2 s of test speech)"},
			&cli.Float64Flag{Name: "speed", Usage: "speak: 1 sends in real time, 2 twice as fast; 0 as fast as the socket takes it"},
			&cli.DurationFlag{Name: "chunk", Value: botsim.DefaultChunk, Usage: "speak: audio per message"},
			&cli.DurationFlag{Name: "repeat", Usage: "speak: speak again this long after each start (0: once)"},
			&cli.DurationFlag{Name: "interrupt-after", Usage: "barge in once after this much of the caller's audio (clear; OpenAI: speech_started)"},
			&cli.BoolFlag{Name: "quiet", Usage: "log no line per call"},
		},
		Action: func(c *cli.Context) error {
			mode, err := botsim.ParseMode(c.String("mode"))
			if err != nil {
				return fmt.Errorf("--mode: %w", err)
			}
			cfg := botsim.Config{
				Mode: mode, Delay: c.Duration("delay"), Speed: c.Float64("speed"), Chunk: c.Duration("chunk"),
				Repeat: c.Duration("repeat"), InterruptAfter: c.Duration("interrupt-after"),
				// A load test's calls need no audio kept: the log line
				// counts it.
				RecordAudio: -1,
			}
			if path := c.String("wav"); path != "" {
				pcm, rate, err := audiofile.ReadPCM(path)
				if err != nil {
					return err
				}
				cfg.Speech = botsim.Speech{PCM: pcm, Rate: rate, Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
			}
			if !c.Bool("quiet") {
				cfg.OnEnd = func(call botsim.Call) { slog.Info(call.Summary()) }
			}
			sim, err := botsim.New(cfg)
			if err != nil {
				return err
			}
			h, paths := sim.Handler(), botsim.Paths
			if p := c.String("protocol"); p != "" {
				if h, err = sim.ProtocolHandler(p); err != nil {
					return fmt.Errorf("--protocol: %w", err)
				}
				paths = map[string]string{p: "/"}
			}
			l, err := net.Listen("tcp", c.String("listen"))
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "voxhost bench bot: %s mode on %s; put in a route's upstream.url:\n", mode, l.Addr())
			for _, p := range botsim.Protocols {
				if path, ok := paths[p]; ok {
					fmt.Fprintf(os.Stderr, "  %-16s ws://%s%s\n", p, l.Addr(), path)
				}
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			go func() { <-c.Context.Done(); srv.Close() }()
			if err := srv.Serve(l); err != http.ErrServerClosed {
				return err
			}
			return nil
		},
	}
}
