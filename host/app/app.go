// Package app assembles a running host from a configuration: the plugin
// runtime, the catalog, the named pipelines and the server. The CLI stays a
// thin layer of flags over it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
)

// DefaultPipelineName and DefaultPipelineSpec describe the pipeline served
// when neither a config file nor --pipeline names one: stock plugins only,
// so a fresh machine runs with no files. It is what a voice bot wants in
// front of it: speech start/end and DTMF keys as events (detected on the
// untouched audio), then line noise gated out and the level evened.
const (
	DefaultPipelineName = "default"
	DefaultPipelineSpec = "vad | dtmf | gate | agc"
)

// Overrides are command-line settings that take precedence over the file.
type Overrides struct {
	// Addr replaces listen.
	Addr string
	// Pipeline, an inline spec, becomes the default pipeline, named "cli".
	Pipeline string
	// PluginsDir replaces plugins_dir.
	PluginsDir string
	// CacheDir replaces cache_dir.
	CacheDir string
}

// Apply folds the overrides into cfg and supplies the built-in default
// pipeline if cfg has none.
func Apply(cfg *config.Config, o Overrides) error {
	if o.Addr != "" {
		cfg.Listen = o.Addr
	}
	if o.PluginsDir != "" {
		cfg.PluginsDir = o.PluginsDir
	}
	if o.CacheDir != "" {
		cfg.CacheDir = o.CacheDir
	}
	if cfg.Pipelines == nil {
		cfg.Pipelines = map[string][]pipeline.StageSpec{}
	}
	spec, name := o.Pipeline, "cli"
	if spec == "" && len(cfg.Pipelines) == 0 {
		spec, name = DefaultPipelineSpec, DefaultPipelineName
	}
	if spec != "" {
		stages, err := pipeline.ParseSpec(spec)
		if err != nil {
			return fmt.Errorf("--pipeline: %w", err)
		}
		cfg.Pipelines[name] = stages
		cfg.DefaultPipeline = name
	}
	if cfg.Auth.TokensEnv != "" && len(cfg.ResolvedTokens()) == 0 {
		return fmt.Errorf("auth.tokens_env names %s, which holds no tokens, and auth.tokens is empty: refusing to serve without auth by accident (set %s, or remove tokens_env)", cfg.Auth.TokensEnv, cfg.Auth.TokensEnv)
	}
	return cfg.Validate()
}

// Host is a configured, ready server with what it owns.
type Host struct {
	Config  config.Config
	Server  *server.Server
	runtime *plugin.Runtime
	catalog *catalog.Catalog
}

// New loads every pipeline's plugins and makes the server.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Host, error) {
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: cfg.CacheDir, MemoryLimitPages: cfg.MemoryLimitPages, Logger: logger})
	if err != nil {
		return nil, err
	}
	cat := catalog.New(rt, cfg.PluginsDir)
	h := &Host{Config: cfg, runtime: rt, catalog: cat}
	defs := map[string]*pipeline.Definition{}
	for name, specs := range cfg.Pipelines {
		def, err := cat.Definition(ctx, name, specs)
		if err != nil {
			h.Close(ctx)
			return nil, err
		}
		defs[name] = def
	}
	h.Server, err = server.New(ctx, server.Options{
		Runtime:         rt,
		Pipelines:       defs,
		DefaultPipeline: cfg.DefaultPipeline,
		MaxCalls:        cfg.Limits.MaxCalls,
		MaxMessageBytes: cfg.Limits.MaxMessageBytes,
		MaxFrameMs:      cfg.Limits.MaxFrameMs,
		IdleTimeout:     cfg.Limits.IdleTimeout,
		DrainTimeout:    cfg.Limits.DrainTimeout,
		ReadyHighWater:  cfg.Limits.ReadyHighWater,
		ReadyLowWater:   cfg.Limits.ReadyLowWater,
		Tokens:          cfg.ResolvedTokens(),
		Origins:         cfg.Origins,
		Logger:          logger,
	})
	if err != nil {
		h.Close(ctx)
		return nil, err
	}
	return h, nil
}

// ListenAndServe serves on the configured address until ctx ends, then
// drains. ready, if not nil, receives the bound address once listening.
func (h *Host) ListenAndServe(ctx context.Context, ready func(addr net.Addr)) error {
	l, err := net.Listen("tcp", h.Config.Listen)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(l.Addr())
	}
	return h.Server.Serve(ctx, l)
}

// Close releases the plugins and the runtime.
func (h *Host) Close(ctx context.Context) {
	_ = h.catalog.Close(ctx)
	_ = h.runtime.Close(ctx)
}

// LoadConfig reads the file at path, or returns the defaults when path is
// empty.
func LoadConfig(path string) (config.Config, error) {
	if path == "" {
		return config.Default(), nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return config.Config{}, fmt.Errorf("config file %s does not exist", path)
	}
	return config.Load(path)
}
