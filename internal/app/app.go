// Package app assembles a running host from a configuration: the plugin
// runtime, the catalog, the named routes (their pipelines and bots) and the
// server. It is where the config's vocabulary is mapped onto the server's;
// the CLI stays a thin layer of flags over it.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/httpguard"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/admin"
	"github.com/voxhost/voxhost/internal/console"
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
	// AdminAddr replaces admin.listen.
	AdminAddr string
	// DrainTimeout, if not zero, replaces limits.drain_timeout.
	DrainTimeout time.Duration
	// MemoryLimitPages, if not zero, replaces memory_limit_pages.
	MemoryLimitPages uint32
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
	if o.AdminAddr != "" {
		cfg.Admin.Listen = o.AdminAddr
	}
	if o.DrainTimeout != 0 {
		cfg.Limits.DrainTimeout = o.DrainTimeout
	}
	if o.MemoryLimitPages != 0 {
		cfg.MemoryLimitPages = o.MemoryLimitPages
	}
	if cfg.Pipelines == nil {
		cfg.Pipelines = map[string]config.Route{}
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
		cfg.Pipelines[name] = config.Route{Inbound: configStages(stages)}
		cfg.DefaultPipeline = name
	}
	if cfg.Auth.TokensEnv != "" && len(cfg.ResolvedTokens()) == 0 {
		return fmt.Errorf("auth.tokens_env names %s, which holds no tokens, and auth.tokens is empty: refusing to serve without auth by accident (set %s, or remove tokens_env)", cfg.Auth.TokensEnv, cfg.Auth.TokensEnv)
	}
	if err := cfg.ValidateChecked(Checker{}); err != nil {
		return err
	}
	return checkAdmin(cfg)
}

// checkAdmin refuses an admin API anyone could reach: the admin API
// replaces the code every call runs.
func checkAdmin(cfg *config.Config) error {
	a := cfg.Admin
	if a.Listen == "" || len(cfg.ResolvedAdminTokens()) > 0 {
		return nil
	}
	if a.TokensEnv != "" {
		return fmt.Errorf("admin.tokens_env names %s, which holds no tokens, and admin.tokens is empty: refusing to serve the admin API without auth by accident (set %s, or remove tokens_env)", a.TokensEnv, a.TokensEnv)
	}
	if !isLoopback(a.Listen) {
		return fmt.Errorf("admin.listen %s is not a loopback address and there are no admin tokens: anyone who can reach it could replace the plugins every call runs; set admin.tokens or admin.tokens_env, or listen on 127.0.0.1", a.Listen)
	}
	return nil
}

// isLoopback says whether a host:port listens on loopback addresses only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Host is a configured, ready server with what it owns.
type Host struct {
	Config  config.Config
	Server  *server.Server
	runtime *plugin.Runtime
	catalog *catalog.Catalog
	manager *admin.Manager
	log     *slog.Logger
	// sipAddr is the SIP endpoint's bound address (SIPAddr).
	sipAddr atomic.Pointer[netip.AddrPort]

	// configPath and overrides are where Reload rereads the pipelines.
	configPath string
	overrides  Overrides

	// adminTokens are the admin API's: admin.tokens, or one made for
	// the run (adminTokenMade) when there are none and
	// admin.insecure_no_token is not set.
	adminTokens    []string
	adminTokenMade bool

	adminAddr   atomic.Pointer[net.Addr]
	stopWatcher atomic.Pointer[func()]
}

// New loads every route's plugins and makes the server.
func New(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Host, error) {
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: cfg.CacheDir, MemoryLimitPages: cfg.MemoryLimitPages, Logger: logger,
		Limits: plugin.Limits(cfg.PluginLimits.Module), CompileTimeout: cfg.PluginLimits.CompileTimeout, InitBudget: cfg.PluginLimits.InitBudget})
	if err != nil {
		return nil, err
	}
	cat := catalog.New(rt, cfg.PluginsDir)
	if logger == nil {
		logger = slog.Default()
	}
	h := &Host{Config: cfg, runtime: rt, catalog: cat, log: logger, adminTokens: cfg.ResolvedAdminTokens()}
	if cfg.Admin.Listen != "" && len(h.adminTokens) == 0 && !cfg.Admin.InsecureNoToken {
		// Any web page, and any local user, can send requests to a
		// loopback port: an admin API without a token would take their
		// orders. A token made for the run keeps the quick start a single
		// command (voxhost serve prints it) without that.
		var b [16]byte
		_, _ = rand.Read(b[:])
		h.adminTokens, h.adminTokenMade = []string{hex.EncodeToString(b[:])}, true
	}
	specs, err := routeSpecs(cfg.Pipelines)
	if err != nil {
		h.Close(ctx)
		return nil, err
	}
	routes, err := admin.BuildRoutes(ctx, cat, specs)
	if err != nil {
		h.Close(ctx)
		return nil, err
	}
	h.Server, err = server.New(ctx, server.Options{
		Runtime:          rt,
		Routes:           routes,
		DefaultRoute:     cfg.DefaultPipeline,
		MaxCalls:         cfg.Limits.MaxCalls,
		MaxMessageBytes:  cfg.Limits.MaxMessageBytes,
		MaxFrameMs:       cfg.Limits.MaxFrameMs,
		IdleTimeout:      cfg.Limits.IdleTimeout,
		DrainTimeout:     zeroMeans(cfg.Limits.DrainTimeout, server.NoDrain),
		ReadyHighWater:   cfg.Limits.ReadyHighWater,
		ReadyLowWater:    cfg.Limits.ReadyLowWater,
		CPUHighWater:     float64(cfg.Limits.CPUHighWaterPercent) / 100,
		CPULowWater:      float64(cfg.Limits.CPULowWaterPercent) / 100,
		CPUWaitHighWater: cfg.Limits.CPUWaitHighWater,
		CPUWaitLowWater:  cfg.Limits.CPUWaitLowWater,
		MaxSetups:        cfg.Limits.MaxConcurrentSetups,
		SetupWait:        cfg.Limits.SetupWait,
		PlayoutQueue:     cfg.Playout.Queue,
		SendAhead:        zeroMeans(cfg.Playout.SendAhead, server.NoSendAhead),
		StallTimeout:     cfg.Limits.StallTimeout,
		CallCPUShare:     cfg.Limits.CallCPUShare,
		FrameDeadline:    cfg.Limits.FrameDeadline,
		PluginSlots:      cfg.Limits.PluginSlots,
		CallCostPrior:    cfg.Limits.CallHostCost,
		Tokens:           cfg.ResolvedTokens(),
		Origins:          cfg.Origins,
		Logger:           logger,
		HTTP:             httpLimits(cfg),
		AllowedHosts:     cfg.AllowedHosts,
	})
	if err != nil {
		h.Close(ctx)
		return nil, err
	}
	h.manager, err = admin.NewManager(admin.ManagerOptions{
		Catalog: cat, Server: h.Server, Routes: specs, Built: routes, DefaultRoute: cfg.DefaultPipeline, Logger: logger,
	})
	if err != nil {
		h.Close(ctx)
		return nil, err
	}
	return h, nil
}

// httpLimits maps the config's http section onto what each listener
// applies.
func httpLimits(cfg config.Config) httpguard.Limits {
	h := cfg.HTTP
	return httpguard.Limits{ReadHeaderTimeout: h.ReadHeaderTimeout, ReadTimeout: h.ReadTimeout, IdleTimeout: h.IdleTimeout,
		MaxHeaderBytes: h.MaxHeaderBytes, MaxConnsPerIP: cfg.ResolvedMaxConnsPerIP()}
}

// AdminToken returns the admin token voxhost made for this run, when
// admin.listen is set with no admin.tokens and no admin.insecure_no_token,
// and "" otherwise: what voxhost serve prints for the operator to paste
// into the console or send with curl.
func (h *Host) AdminToken() string {
	if h.adminTokenMade {
		return h.adminTokens[0]
	}
	return ""
}

// Manager changes the host's plugins and routes while it serves.
func (h *Host) Manager() *admin.Manager { return h.manager }

// SetConfigFile says which file Reload (SIGHUP, POST /reload) rereads the
// routes from, and the command-line overrides to apply to it again.
// Call it before ListenAndServe.
func (h *Host) SetConfigFile(path string, o Overrides) {
	h.configPath, h.overrides = path, o
}

// Reload rereads the configuration file and applies its routes (their
// stages in both directions, their upstreams, with header variables read
// from the environment again, and the plugin files they name) for new
// calls; calls in flight keep theirs. A file that does not load, or a route
// that does not build, changes nothing and returns the reason, with
// file:line:col when the file is at fault. Other settings apply only at
// start-up: those that changed are listed in RestartRequired and logged.
func (h *Host) Reload(ctx context.Context) (*admin.ReloadReport, error) {
	if h.configPath == "" {
		return nil, errors.New("voxhost was started without a config file (--config): there is no file to reload pipelines from")
	}
	cfg, err := LoadConfig(h.configPath)
	if err == nil {
		err = Apply(&cfg, h.overrides)
	}
	var specs map[string]admin.RouteSpec
	if err == nil {
		specs, err = routeSpecs(cfg.Pipelines)
	}
	if err != nil {
		h.manager.ReloadFailed(err)
		return nil, err
	}
	rep, err := h.manager.SetRoutes(ctx, specs, cfg.DefaultPipeline)
	if err != nil {
		return nil, err
	}
	rep.RestartRequired = restartOnly(h.Config, cfg)
	if len(rep.RestartRequired) > 0 {
		h.log.Warn("config changes that apply only at start-up were not applied; restart voxhost for them",
			"file", h.configPath, "keys", strings.Join(rep.RestartRequired, ","))
	}
	return rep, nil
}

// restartOnly lists the keys, other than the routes, whose values differ.
func restartOnly(old, cur config.Config) []string {
	var keys []string
	for _, k := range []struct {
		key  string
		a, b any
	}{
		{"listen", old.Listen, cur.Listen},
		{"plugins_dir", old.PluginsDir, cur.PluginsDir},
		{"cache_dir", old.CacheDir, cur.CacheDir},
		{"log_level", old.LogLevel, cur.LogLevel},
		{"memory_limit_pages", old.MemoryLimitPages, cur.MemoryLimitPages},
		{"plugin_limits", old.PluginLimits, cur.PluginLimits},
		{"limits", old.Limits, cur.Limits},
		{"playout", old.Playout, cur.Playout},
		{"audiosocket", old.AudioSocket, cur.AudioSocket},
		{"sip", old.SIP, cur.SIP},
		{"auth", old.ResolvedTokens(), cur.ResolvedTokens()},
		{"admin", []any{old.Admin.Listen, old.ResolvedAdminTokens(), old.Admin.AllowedHosts, old.Admin.InsecureNoToken},
			[]any{cur.Admin.Listen, cur.ResolvedAdminTokens(), cur.Admin.AllowedHosts, cur.Admin.InsecureNoToken}},
		{"http", old.HTTP, cur.HTTP},
		{"allowed_hosts", old.AllowedHosts, cur.AllowedHosts},
		{"origins", old.Origins, cur.Origins},
		{"console", old.Console, cur.Console},
	} {
		if !reflect.DeepEqual(k.a, k.b) {
			keys = append(keys, k.key)
		}
	}
	return keys
}

// ListenAndServe serves on the configured address until ctx ends, then
// drains. With admin.listen set it serves the admin API there too; with a
// plugin directory it watches it. ready, if not nil, receives the bound
// address once listening (AdminAddr is set by then).
func (h *Host) ListenAndServe(ctx context.Context, ready func(addr net.Addr)) error {
	l, err := net.Listen("tcp", h.Config.Listen)
	if err != nil {
		return err
	}
	if h.Config.Admin.Listen != "" {
		al, err := net.Listen("tcp", h.Config.Admin.Listen)
		if err != nil {
			_ = l.Close()
			return fmt.Errorf("admin API: %w", err)
		}
		stop := h.serveAdmin(al)
		defer stop()
	}
	if h.Config.PluginsDir != "" {
		stop, err := h.manager.Watch(ctx, admin.DefaultDebounce)
		if err != nil {
			h.log.Warn("not watching the plugin directory: new versions there are picked up only by the admin API, SIGHUP or a restart",
				"dir", h.Config.PluginsDir, "err", err)
		} else {
			h.stopWatcher.Store(&stop)
			defer stop()
		}
	}
	if a := h.Config.AudioSocket; a.Listen != "" {
		proto, err := transport.LookupProtocol("audiosocket")
		if err != nil {
			_ = l.Close()
			return err
		}
		sl, err := net.Listen("tcp", a.Listen)
		if err != nil {
			_ = l.Close()
			return fmt.Errorf("audiosocket: %w", err)
		}
		h.log.Info("serving AudioSocket", "addr", sl.Addr().String(), "pipeline", a.Pipeline)
		go func() {
			if err := h.Server.ServeStream(ctx, sl, proto, a.Pipeline); err != nil {
				h.log.Error("AudioSocket listener failed", "err", err)
			}
		}()
	}
	if h.Config.SIP.Listen != "" {
		if err := h.serveSIP(ctx); err != nil {
			_ = l.Close()
			return err
		}
	}
	if h.Config.Console {
		if err := h.mountConsole(); err != nil {
			_ = l.Close()
			return err
		}
	}
	if ready != nil {
		ready(l.Addr())
	}
	return h.Server.Serve(ctx, l)
}

// mountConsole puts the console on the main listener (console: true): the
// page at /console/ and its API at /console/api/, behind the callers'
// tokens, beside the server's endpoints.
func (h *Host) mountConsole() error {
	tokens := h.Config.ResolvedTokens()
	con, err := h.console("/console/api/", "call token (auth.tokens)", false, ticketOwner(tokens))
	if err != nil {
		return err
	}
	protect := admin.RequireBearer(tokens, "voxhost", "token", "auth.tokens")
	page := con.Handler(protect)
	h.Server.Handle("/console", page)
	h.Server.Handle("/console/", page)
	h.Server.Handle("/console/api/", http.StripPrefix("/console/api", admin.NewConsoleAPI(admin.HandlerOptions{
		Manager: h.manager, Tokens: tokens, Logger: h.log})))
	return nil
}

// serveAdmin serves the admin API on l until the returned stop is called.
func (h *Host) serveAdmin(l net.Listener) (stop func()) {
	var reload func(context.Context) (*admin.ReloadReport, error)
	if h.configPath != "" {
		reload = h.Reload
	}
	tokens := h.adminTokens
	if len(tokens) == 0 {
		h.log.Warn("admin API without tokens (admin.insecure_no_token): any local user or program that can reach the loopback address may replace plugins", "addr", l.Addr().String())
	}
	api := admin.NewHandler(admin.HandlerOptions{Manager: h.manager, Reload: reload, Tokens: tokens, Logger: h.log,
		// A larger upload could not load anyway.
		MaxUploadBytes: int64(h.Config.PluginLimits.Module.ModuleBytes)})
	mux := http.NewServeMux()
	mux.Handle("/", api)
	if con, err := h.console("/", "admin token (admin.tokens)", true, ticketOwner(tokens)); err != nil {
		h.log.Error("not serving the console", "err", err)
	} else {
		page := con.Handler(admin.RequireBearer(tokens, "voxhost admin", "admin token", "admin.tokens"))
		mux.Handle("/console", page)
		mux.Handle("/console/", page)
	}
	limits := httpLimits(h.Config)
	l = limits.Listener(l, nil)
	// The Host check stops a rebound web page's name before anything
	// else; SameOrigin stops a page of another origin posting to it.
	// Both hold with or without tokens: a page cannot send the token, but
	// a host with admin.insecure_no_token has none to send.
	handler := httpguard.Hosts(h.Config.Admin.AllowedHosts, l.Addr(), "admin.allowed_hosts", nil, httpguard.SameOrigin(mux))
	hs := limits.Server(handler, slog.NewLogLogger(h.log.Handler(), slog.LevelWarn))
	addr := l.Addr()
	h.adminAddr.Store(&addr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(l)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-done
	}
}

// console makes the browser console of a listener whose API is at api
// and asks for the token named token; allCalls says whether that API lists
// every live call.
func (h *Host) console(api, token string, allCalls bool, owner func(*http.Request) string) (*console.Console, error) {
	callToken := ""
	if t := h.Config.ResolvedTokens(); len(t) > 0 {
		callToken = t[0]
	}
	return console.New(console.Options{Server: h.Server, CallToken: callToken, API: api, Token: token, AllCalls: allCalls, Owner: owner, Logger: h.log})
}

// ticketOwner says whom a listener's console tickets count against: the
// token, behind tokens; the source address on a listener without any,
// where every Authorization header passes and so names no one.
func ticketOwner(tokens []string) func(*http.Request) string {
	if len(tokens) == 0 {
		return console.AddressOwner
	}
	return console.TokenOwner
}

// AdminAddr is the admin API's bound address, or nil when it is not
// served.
func (h *Host) AdminAddr() net.Addr {
	if a := h.adminAddr.Load(); a != nil {
		return *a
	}
	return nil
}

// Close stops the plugin directory watcher, ends the calls still in
// progress (at once: ListenAndServe is what drains them in their own time),
// stops the server's CPU sampler, and releases the plugins and the runtime.
func (h *Host) Close(ctx context.Context) {
	if stop := h.stopWatcher.Load(); stop != nil {
		(*stop)()
	}
	if h.Server != nil {
		// A call still running reads and writes its plugins' memory,
		// which the runtime's Close unmaps: one running a frame then
		// crashed the process (SIGSEGV in the codec).
		now, cut := context.WithCancel(ctx)
		cut()
		h.Server.Drain(now)
		h.Server.Close()
	}
	_ = h.catalog.Close(ctx)
	_ = h.runtime.Close(ctx)
}

// LoadConfig reads the file at path, checked with Checker, or returns the
// defaults when path is empty.
func LoadConfig(path string) (config.Config, error) {
	if path == "" {
		return config.Default(), nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return config.Config{}, fmt.Errorf("config file %s does not exist", path)
	}
	return config.LoadChecked(path, Checker{})
}

// zeroMeans maps a config's 0, which means none (drain_timeout: cut calls
// at once; send_ahead: pace every caller), to the server's value for none,
// whose own zero means its default.
func zeroMeans(d, none time.Duration) time.Duration {
	if d == 0 {
		return none
	}
	return d
}

// routeSpecs maps the config's routes onto the specs the admin manager
// builds server routes from: the upstream's protocol looked up, its audio
// format and failure policy parsed, its headers in the form they are sent.
// The config was validated, so an error here means it was not.
func routeSpecs(routes map[string]config.Route) (map[string]admin.RouteSpec, error) {
	specs := make(map[string]admin.RouteSpec, len(routes))
	for name, r := range routes {
		u, err := upstream(r.Upstream)
		if err != nil {
			return nil, fmt.Errorf("pipeline %s: upstream: %w", name, err)
		}
		overQuota, err := server.ParseQuotaPolicy(r.OverQuota)
		if err != nil {
			return nil, fmt.Errorf("pipeline %s: %w", name, err)
		}
		specs[name] = admin.RouteSpec{Inbound: stageSpecs(r.Inbound), Outbound: stageSpecs(r.Outbound), Upstream: u, OverQuota: overQuota, Recording: recordingSpec(r.Recording)}
	}
	return specs, nil
}

// recordingSpec maps a route's recording onto the recorder's spec; the
// config was validated, so every stream name is known.
func recordingSpec(r *config.Recording) *recording.Spec {
	if r == nil {
		return nil
	}
	spec := &recording.Spec{Dir: r.Dir, MaxDuration: time.Duration(r.MaxSeconds) * time.Second, MinFreeBytes: r.MinFreeBytes}
	for _, w := range r.What {
		if s, err := recording.ParseStream(w); err == nil {
			spec.Streams = append(spec.Streams, s)
		}
	}
	return spec
}

func upstream(u *config.Upstream) (*server.Upstream, error) {
	if u == nil {
		return nil, nil
	}
	d, err := transport.LookupDialect(u.Protocol)
	if err != nil {
		return nil, err
	}
	f, err := codec.ParseFormat(u.Codec, u.Rate)
	if err != nil {
		return nil, err
	}
	onFailure, err := server.ParseFailurePolicy(u.OnFailure)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	for name, v := range u.Headers {
		header.Set(name, v.Reveal())
	}
	return &server.Upstream{URL: u.URL, Dialect: d, Format: f, Header: header, Options: maps.Clone(u.Options),
		ConnectTimeout: u.ConnectTimeout, OnFailure: onFailure}, nil
}
