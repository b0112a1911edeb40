package config

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// Config is the whole configuration of a voxhost server.
type Config struct {
	// Listen is the host:port the server listens on.
	Listen string
	// PluginsDir is searched for NAME.wasm before the stock plugins, so a
	// deployment can override a stock plugin without rebuilding voxhost.
	PluginsDir string
	// CacheDir keeps compiled plugins across restarts: empty means the
	// runtime's default (plugin.DefaultCacheDir), "-" disables the on-disk
	// cache.
	CacheDir string
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// MemoryLimitPages caps each plugin instance's memory, in 64 KiB pages;
	// with one instance per stage per call, it bounds what a call can cost.
	MemoryLimitPages uint32
	// Limits bound what calls may use.
	Limits Limits
	// PluginLimits bound what a plugin module may declare, how long it
	// may take to load, and its set-up calls.
	PluginLimits PluginLimits
	// Auth decides who may place calls.
	Auth Auth
	// Admin is the plugin and pipeline API, on a listener of its own.
	Admin Admin
	// HTTP bounds each connection of the call and admin listeners.
	HTTP HTTP
	// AllowedHosts are the Host header patterns the call listener answers
	// to (path.Match, case-insensitive: "voice.example.com",
	// "*.example.com"; "*" turns the check off). With none, a listener
	// bound to loopback answers loopback names and addresses only (a web
	// page whose name was rebound to 127.0.0.1 is refused), and one bound
	// elsewhere every name. "localhost" and IP addresses need no pattern.
	AllowedHosts []string
	// Origins are the host patterns of the browser origins allowed to
	// connect, as coder/websocket's AcceptOptions.OriginPatterns. Empty
	// allows same-origin pages only; clients that send no Origin header are
	// not browsers, so no cross-site request forgery can ride on them, and
	// they are always allowed.
	Origins []string
	// Console serves the browser console on the main
	// listener too, at /console/, behind auth.tokens; the admin listener
	// always serves it, behind admin.tokens.
	Console bool
	// Playout bounds the bot audio a relayed call holds for its caller and
	// sends ahead of real time.
	Playout Playout
	// AudioSocket serves Asterisk's AudioSocket (plain TCP) calls.
	AudioSocket AudioSocket
	// SIP serves SIP trunks: signalling on UDP and TCP, media over RTP.
	SIP SIP
	// DefaultPipeline names the route of calls that ask for none.
	DefaultPipeline string
	// Pipelines are the routes calls may ask for, by name (the key is
	// "pipelines" because a route began as a list of stages, and that list
	// is still a route: an echo through those stages).
	Pipelines map[string]Route
}

// Limits protect the server from too many, too large or abandoned calls.
type Limits struct {
	// MaxCalls is how many calls may run at once; more are refused with
	// HTTP 503 before the WebSocket upgrade, while refusing is still cheap.
	MaxCalls int
	// MaxMessageBytes is the largest WebSocket message accepted.
	MaxMessageBytes int
	// MaxFrameMs is the longest audio frame accepted, in milliseconds.
	MaxFrameMs int
	// IdleTimeout ends a call that has sent no audio for this long, so a
	// vanished client does not hold a call slot forever.
	IdleTimeout time.Duration
	// DrainTimeout is how long active calls may finish after SIGTERM.
	DrainTimeout time.Duration
	// ReadyHighWater is the number of active calls at which /readyz turns
	// false, so a load balancer sends new calls elsewhere while these go
	// on; 0 means MaxCalls.
	ReadyHighWater int
	// ReadyLowWater is the number of active calls at or below which
	// /readyz turns true again; 0 means 90% of the high-water mark.
	ReadyLowWater int
	// CPUHighWaterPercent is the CPU use, in percent of the cores Go runs
	// on (GOMAXPROCS) and averaged over about 150 ms, at which the
	// server counts as overloaded: it refuses new calls with HTTP 503 and
	// turns /readyz false, so that the calls it has keep their frames on
	// time even when each plugin stays inside its budget. 0 turns CPU
	// shedding off.
	CPUHighWaterPercent int
	// CPULowWaterPercent is the CPU use at or below which an overloaded
	// server takes calls again; 0 means 15 points below the high-water
	// mark, but not below half of it.
	CPULowWaterPercent int
	// CPUWaitHighWater is how long goroutines that became runnable may
	// wait for a core (90th percentile, averaged over about 150 ms)
	// before the server counts as overloaded, as with CPUHighWaterPercent.
	// It sees what CPU use cannot: a process starved by other processes,
	// which then uses less CPU than its mark. 0 turns it off, and is the
	// default, because a burst of new calls makes goroutines wait too (100
	// calls dialling at once took the 90th percentile to 12–19 ms) and
	// would be refused in part; where the host shares its cores (a node
	// without CPU limits), 10ms, half a frame, is a start.
	CPUWaitHighWater time.Duration
	// CPUWaitLowWater is the wait at or below which an overloaded server
	// takes calls again; 0 means a fifth of the high-water mark.
	CPUWaitLowWater time.Duration
	// MaxConcurrentSetups caps the call set-ups (each plugin's start
	// function, _initialize and vox_init, under the init budget) that run
	// at once, so that a burst of new calls leaves the calls already
	// running a core; 0 means one fewer than GOMAXPROCS, and at least 1.
	MaxConcurrentSetups int
	// SetupWait is how long a new call may wait for a set-up slot; one
	// that waits longer is refused (HTTP 503, or close code 1013 on a
	// Twilio stream), so that a queue of set-ups cannot grow without end.
	SetupWait time.Duration
	// StallTimeout ends a relayed call whose caller or bot has not taken a
	// message the host is writing to it for this long: a peer that stopped
	// reading would otherwise hold the call, and its bot's audio, forever.
	StallTimeout time.Duration
	// CallCPUShare is the most of one core, from 0 to 1, a call's plugins
	// may use over the scheduler's one-second window before its route's
	// over_quota policy degrades or ends it; 0 means 0.5 (10 ms of every
	// 20 ms frame). See README, "Real time".
	CallCPUShare float64
	// FrameDeadline is how long after a caller's frame was read its
	// answer is due: the scheduler runs plugin work earliest deadline
	// first, and voxhost_frames_late_total counts the frames past it; 0
	// means 20ms, one frame.
	FrameDeadline time.Duration
	// PluginSlots is how many calls may run plugin code at once; 0 means
	// GOMAXPROCS, the cores Go runs on.
	PluginSlots int
	// CallHostCost is the CPU, as a fraction of one core, admission
	// assumes the host spends on a call outside its plugins (socket,
	// codec, scheduling) until 16 calls run steadily enough to measure
	// it, and the least it measures after; 0 means the server's default
	// (0.00125, 1.25 ms of CPU per second of call). A surge is admitted on
	// it: set it to what this machine measures (DEPLOY.md, "Sizing").
	CallHostCost float64
}

// AudioSocket is the plain-TCP listener for Asterisk's AudioSocket
// (AudioSocket() in the dialplan, or Dial(AudioSocket/host:port/uuid)).
// The protocol has no authentication: bind it to an address only the PBX
// can reach.
type AudioSocket struct {
	// Listen is its host:port; empty means no AudioSocket listener.
	Listen string
	// Pipeline names the route its calls run; empty means the default.
	Pipeline string
}

// Playout bounds the bot's audio on its way to the caller of a relayed
// call.
type Playout struct {
	// Queue is how much bot audio, in audio time, a call holds for its
	// caller; a bot that sends more is not read until the caller has heard
	// enough, so a bot that answers faster than real time cannot make the
	// host buffer without end.
	Queue time.Duration
	// SendAhead is how far ahead of real time bot audio is sent to a
	// caller whose protocol buffers it (Twilio), so that a late frame of
	// the host's does not become a gap the caller hears; 0 paces every
	// caller at real time. Callers whose protocol does not buffer (raw)
	// are always paced.
	SendAhead time.Duration
}

// PluginLimits bound what loading and setting up a plugin may cost the
// host: every count a module declares is checked before it is compiled,
// so that a module of a few kilobytes cannot make loading take gigabytes
// or minutes.
type PluginLimits struct {
	// Module caps what a module may declare: bytes, functions, locals,
	// code, nesting, tables, globals, segments.
	Module ModuleLimits
	// CompileTimeout caps the loading of one module once a compile slot
	// is free.
	CompileTimeout time.Duration
	// InitBudget caps each set-up call of a plugin instance (start
	// function, _initialize, vox_init, vox_rate), which every call pays.
	InitBudget time.Duration
}

// ModuleLimits are the keys of plugin_limits that cap what a module may
// declare, each the field of the plugin runtime's Limits (plugin.Limits)
// of the same name, which documents it: the two types have the same
// fields in the same order, so that internal/app converts one into the other
// and a field added to one and not the other does not compile. A zero
// field means the runtime's default; the file cannot set one to 0, which
// would read as "no module may have any".
type ModuleLimits struct {
	ModuleBytes        int
	Functions          uint32
	FunctionLocals     uint64
	ModuleLocals       uint64
	FunctionBytes      int
	CodeBytes          int
	Nesting            int
	Tables             uint32
	TableElements      uint64
	Globals            uint32
	DataSegments       uint32
	DataBytes          uint64
	ElementEntries     uint64
	BranchTableEntries uint64
	RewriteFactor      int
}

// Auth holds the bearer tokens that admit a call.
type Auth struct {
	// Tokens are accepted as "Authorization: Bearer TOKEN" or ?token=.
	// With no tokens at all (see ResolvedTokens) anyone may call.
	Tokens []string
	// TokensEnv names an environment variable holding more tokens,
	// comma-separated, so secrets need not be written into the file.
	TokensEnv string
}

// Admin configures the admin API: list, upload and delete plugins, reload
// pipelines. It is served only when Listen is set.
type Admin struct {
	// Listen is the admin API's host:port; empty means no admin API. It
	// must differ from the call listener's, so that the admin port can
	// stay unreachable from outside.
	Listen string
	// Tokens are accepted as "Authorization: Bearer TOKEN". Without any
	// (see ResolvedAdminTokens) the API is served on a loopback address
	// only.
	Tokens []string
	// TokensEnv names an environment variable holding more admin tokens,
	// comma-separated.
	TokensEnv string
	// AllowedHosts are the Host header patterns the admin listener
	// answers to, as the call listener's AllowedHosts.
	AllowedHosts []string
	// InsecureNoToken serves the admin API on loopback with no token at
	// all: anything that can reach the port, any local user or program,
	// may then replace the plugins every call runs. Without it and without
	// tokens, voxhost serve makes a token for the run and prints it. The
	// profiles (/debug/pprof) are never served without a token.
	InsecureNoToken bool
}

// HTTP bounds what one connection of the call or admin listener may hold,
// so that clients that connect and wait, send slowly or send huge headers
// cannot pile up goroutines, descriptors and memory.
type HTTP struct {
	// ReadHeaderTimeout is how long a client may take over a request's
	// headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client may take over a whole request, its
	// body included (a plugin upload, a file for POST /run). A call's
	// WebSocket is not bound by it once upgraded.
	ReadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next
	// request for this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers; a larger request is
	// answered 431.
	MaxHeaderBytes int
	// MaxConnsPerIP caps the open connections of one source address on
	// each listener; further ones are closed at once. 0 means
	// limits.max_calls + 64: a carrier or a load balancer may bring every
	// call from one address, and probes and scrapes need room beside them.
	MaxConnsPerIP int
}

// MaxConnsPerIPSlack is what MaxConnsPerIP's 0 adds to limits.max_calls.
const MaxConnsPerIPSlack = 64

// DefaultCPUHighWaterPercent is limits.cpu_high_water_percent's default.
const DefaultCPUHighWaterPercent = 85

// Default returns the configuration used for every key a file leaves out.
// It has no pipelines.
func Default() Config {
	return Config{
		Listen:   ":8080",
		LogLevel: "info",
		// The plugin runtime's defaults (plugin.DefaultMemoryLimitPages,
		// DefaultCompileTimeout, DefaultInitBudget) are written again
		// below, as the server's are, because config is a leaf;
		// internal/app's tests compare them.
		MemoryLimitPages: 256,
		Limits: Limits{
			MaxCalls:        1000,
			MaxMessageBytes: 65536,
			MaxFrameMs:      100,
			IdleTimeout:     10 * time.Second,
			DrainTimeout:    30 * time.Second,
			// 85% leaves room for a garbage collection cycle, which takes
			// a quarter of the cores while it marks.
			CPUHighWaterPercent: DefaultCPUHighWaterPercent,
			SetupWait:           2 * time.Second,
			// The server's defaults (server.DefaultStallTimeout,
			// DefaultPlayoutQueue, DefaultSendAhead), written again because
			// config is a leaf: here they are what the file's keys start
			// from, so that 0 can mean "none" where it is meant.
			StallTimeout: 5 * time.Second,
		},
		Playout: Playout{Queue: 20 * time.Second, SendAhead: 200 * time.Millisecond},
		SIP:     DefaultSIP(),
		// httpguard's defaults, written again for the same reason.
		HTTP:         HTTP{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 2 * time.Minute, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10},
		PluginLimits: PluginLimits{CompileTimeout: 2 * time.Minute, InitBudget: 50 * time.Millisecond},
	}
}

// Load reads the configuration file at path; see Parse.
func Load(path string) (Config, error) {
	return LoadChecked(path, nil)
}

// LoadChecked reads the configuration file at path; see ParseChecked.
func LoadChecked(path string, ch Checker) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return ParseChecked(path, data, ch)
}

// Parse decodes a YAML configuration on top of Default and validates it
// as far as config can alone (see Checker for the rest). Unknown keys and
// values of the wrong type are errors. Name is the file name that starts
// each error, as in "voxhost.yaml:3:1: unknown key".
func Parse(name string, data []byte) (Config, error) {
	return ParseChecked(name, data, nil)
}

// ParseChecked is Parse that also asks ch about the values only the
// runtime knows (a nil ch asks nothing), and reports its errors at the
// file's line as its own.
func ParseChecked(name string, data []byte, ch Checker) (Config, error) {
	c := Default()
	d := newDecoder()
	if err := d.decode(data, &c); err != nil {
		return Config{}, d.locate(name, err)
	}
	if err := c.ValidateChecked(ch); err != nil {
		return Config{}, d.locate(name, err)
	}
	return c, nil
}

// Validate checks every value config can check alone and reports the
// first problem, prefixed by the key path of the value, e.g.
// "limits.max_calls: ...". When exactly one pipeline is defined and
// DefaultPipeline is empty, Validate makes it the default, which is why it
// takes a pointer.
func (c *Config) Validate() error {
	return c.ValidateChecked(nil)
}

// ValidateChecked is Validate that also asks ch (nil: nothing) about each
// route's stages and upstream.
func (c *Config) ValidateChecked(ch Checker) error {
	if _, err := splitPort(c.Listen); err != nil {
		return invalid("listen", "%v; write host:port, e.g. \":8080\"", err)
	}
	if c.MemoryLimitPages < 1 || c.MemoryLimitPages > 65536 {
		// 65536 pages are the 4 GiB a 32-bit WebAssembly memory can address.
		return invalid("memory_limit_pages", "must be between 1 and 65536 (64 KiB pages), got %d", c.MemoryLimitPages)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return invalid("log_level", "unknown level %q (want debug, info, warn or error)", c.LogLevel)
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	if err := c.PluginLimits.validate(); err != nil {
		return err
	}
	if err := c.Playout.validate(); err != nil {
		return err
	}
	for i, t := range c.Auth.Tokens {
		if strings.TrimSpace(t) == "" {
			// Dropping it quietly could leave a server that was meant to
			// require a token open to everyone.
			return invalid(fmt.Sprintf("auth.tokens[%d]", i), "empty token")
		}
	}
	if c.Admin.Listen != "" {
		port, err := splitPort(c.Admin.Listen)
		if err != nil {
			return invalid("admin.listen", "%v; write host:port, e.g. \"127.0.0.1:9090\"", err)
		}
		if c.Admin.Listen == c.Listen && port != "0" {
			return invalid("admin.listen", "%q is also the call listener's address; give the admin API a port of its own", c.Admin.Listen)
		}
	}
	for i, t := range c.Admin.Tokens {
		if strings.TrimSpace(t) == "" {
			return invalid(fmt.Sprintf("admin.tokens[%d]", i), "empty token")
		}
	}
	if c.Admin.InsecureNoToken && (len(c.Admin.Tokens) > 0 || c.Admin.TokensEnv != "") {
		return invalid("admin.insecure_no_token", "is set, but so are admin tokens: remove one or the other")
	}
	if err := c.HTTP.validate(); err != nil {
		return err
	}
	if err := validateHosts("allowed_hosts", c.AllowedHosts); err != nil {
		return err
	}
	if err := validateHosts("admin.allowed_hosts", c.Admin.AllowedHosts); err != nil {
		return err
	}
	if a := c.AudioSocket.Listen; a != "" {
		port, err := splitPort(a)
		if err != nil {
			return invalid("audiosocket.listen", "%v; write host:port, e.g. \"127.0.0.1:9092\"", err)
		}
		if (a == c.Listen || a == c.Admin.Listen) && port != "0" {
			return invalid("audiosocket.listen", "%q is also another listener's address; give AudioSocket a port of its own", a)
		}
	}
	if p := c.AudioSocket.Pipeline; p != "" {
		if _, ok := c.Pipelines[p]; !ok {
			return invalid("audiosocket.pipeline", "unknown pipeline %q", p)
		}
	}
	if err := c.SIP.validate(c.Pipelines, c.Listen, c.Admin.Listen, c.AudioSocket.Listen); err != nil {
		return err
	}
	for i, p := range c.Origins {
		// coder/websocket only finds a bad pattern when a browser connects,
		// and then refuses every cross-origin call.
		if _, err := path.Match(p, ""); p == "" || err != nil {
			return invalid(fmt.Sprintf("origins[%d]", i), "bad origin pattern %q (want a host pattern such as \"*.example.com\")", p)
		}
	}
	return c.validatePipelines(ch)
}

// validateHosts checks Host patterns, at key.
func validateHosts(key string, patterns []string) error {
	for i, p := range patterns {
		// A pattern is matched against the name alone: one with a port or
		// a slash would never match, and the listener would refuse all.
		if _, err := path.Match(p, ""); p == "" || err != nil || strings.ContainsAny(p, ":/ ") {
			return invalid(fmt.Sprintf("%s[%d]", key, i), "bad host pattern %q (want a name or pattern without a port, such as \"voice.example.com\" or \"*.example.com\")", p)
		}
	}
	return nil
}

func (h *HTTP) validate() error {
	switch {
	case h.ReadHeaderTimeout <= 0:
		return invalid("http.read_header_timeout", "must be positive, got %v", h.ReadHeaderTimeout)
	case h.ReadTimeout <= 0:
		return invalid("http.read_timeout", "must be positive, got %v", h.ReadTimeout)
	case h.IdleTimeout <= 0:
		return invalid("http.idle_timeout", "must be positive, got %v", h.IdleTimeout)
	case h.MaxHeaderBytes < 1024 || h.MaxHeaderBytes > 1<<20:
		return invalid("http.max_header_bytes", "must be between 1024 and 1048576, got %d", h.MaxHeaderBytes)
	case h.MaxConnsPerIP < 0:
		return invalid("http.max_conns_per_ip", "must not be negative (0 means limits.max_calls + %d), got %d", MaxConnsPerIPSlack, h.MaxConnsPerIP)
	}
	return nil
}

// ResolvedMaxConnsPerIP is HTTP.MaxConnsPerIP with its 0 resolved.
func (c *Config) ResolvedMaxConnsPerIP() int {
	if c.HTTP.MaxConnsPerIP > 0 {
		return c.HTTP.MaxConnsPerIP
	}
	return c.Limits.MaxCalls + MaxConnsPerIPSlack
}

// splitPort returns the port of a host:port address. Its error quotes the
// address, which net.AddrError prints as it is: a value with a newline in
// it would split the one-line "file:line:col: message" error in two.
func splitPort(addr string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if ae, ok := err.(*net.AddrError); ok {
		return "", fmt.Errorf("address %q: %s", ae.Addr, ae.Err)
	}
	return port, err
}

func (l *Limits) validate() error {
	switch {
	case l.MaxCalls < 1:
		return invalid("limits.max_calls", "must be at least 1, got %d", l.MaxCalls)
	case l.MaxMessageBytes < 512:
		return invalid("limits.max_message_bytes", "must be at least 512, got %d", l.MaxMessageBytes)
	case l.IdleTimeout <= 0:
		return invalid("limits.idle_timeout", "must be positive, got %v", l.IdleTimeout)
	case l.DrainTimeout < 0:
		return invalid("limits.drain_timeout", "must not be negative, got %v", l.DrainTimeout)
	case l.MaxFrameMs < 20 || l.MaxFrameMs > 1000:
		return invalid("limits.max_frame_ms", "must be between 20 and 1000, got %d", l.MaxFrameMs)
	case l.ReadyHighWater < 0 || l.ReadyHighWater > l.MaxCalls:
		return invalid("limits.ready_high_water", "must be between 1 and max_calls (%d), got %d", l.MaxCalls, l.ReadyHighWater)
	case l.ReadyLowWater < 0 || l.ReadyHighWater > 0 && l.ReadyLowWater >= l.ReadyHighWater || l.ReadyLowWater >= l.MaxCalls:
		return invalid("limits.ready_low_water", "must be below ready_high_water, got %d", l.ReadyLowWater)
	case l.CallCPUShare < 0 || l.CallCPUShare > 1:
		return invalid("limits.call_cpu_share", "must be between 0 (the default, 0.5) and 1, got %g", l.CallCPUShare)
	case l.FrameDeadline < 0:
		return invalid("limits.frame_deadline", "must not be negative, got %v", l.FrameDeadline)
	case l.CallHostCost < 0 || l.CallHostCost > 1:
		return invalid("limits.call_host_cost", "must be between 0 (the default, 0.00125) and 1, got %g", l.CallHostCost)
	case l.PluginSlots < 0:
		return invalid("limits.plugin_slots", "must not be negative, got %d", l.PluginSlots)
	case l.CPUHighWaterPercent < 0 || l.CPUHighWaterPercent > 100:
		return invalid("limits.cpu_high_water_percent", "must be between 0 (off) and 100, got %d", l.CPUHighWaterPercent)
	case l.CPULowWaterPercent != 0 && l.CPUHighWaterPercent == 0:
		return invalid("limits.cpu_low_water_percent", "is set, but cpu_high_water_percent is 0, which turns CPU shedding off")
	case l.CPULowWaterPercent < 0 || l.CPULowWaterPercent >= l.CPUHighWaterPercent && l.CPULowWaterPercent > 0:
		return invalid("limits.cpu_low_water_percent", "must be below cpu_high_water_percent (%d), got %d", l.CPUHighWaterPercent, l.CPULowWaterPercent)
	case l.CPUWaitHighWater < 0:
		return invalid("limits.cpu_wait_high_water", "must not be negative (0 is off), got %v", l.CPUWaitHighWater)
	case l.CPUWaitLowWater != 0 && l.CPUWaitHighWater == 0:
		return invalid("limits.cpu_wait_low_water", "is set, but cpu_wait_high_water is 0, which turns the wait signal off")
	case l.CPUWaitLowWater < 0 || l.CPUWaitLowWater >= l.CPUWaitHighWater && l.CPUWaitLowWater > 0:
		return invalid("limits.cpu_wait_low_water", "must be below cpu_wait_high_water (%v), got %v", l.CPUWaitHighWater, l.CPUWaitLowWater)
	case l.MaxConcurrentSetups < 0:
		return invalid("limits.max_concurrent_setups", "must not be negative (0 means one fewer than the cores), got %d", l.MaxConcurrentSetups)
	case l.SetupWait <= 0:
		return invalid("limits.setup_wait", "must be positive, got %v", l.SetupWait)
	case l.StallTimeout <= 0:
		return invalid("limits.stall_timeout", "must be positive, got %v", l.StallTimeout)
	}
	return nil
}

// minPlayoutQueue is one frame of the bot's audio, which the server's
// queue holds whatever it is told: a smaller value would silently be this.
const minPlayoutQueue = 20 * time.Millisecond

func (p *Playout) validate() error {
	switch {
	case p.Queue < minPlayoutQueue:
		return invalid("playout.queue", "must be at least %v (one frame), got %v", minPlayoutQueue, p.Queue)
	case p.SendAhead < 0:
		return invalid("playout.send_ahead", "must not be negative (0 paces every caller at real time), got %v", p.SendAhead)
	}
	return nil
}

func (l *PluginLimits) validate() error {
	m := l.Module
	switch {
	case m.ModuleBytes != 0 && m.ModuleBytes < 8:
		return invalid("plugin_limits.module_bytes", "must be at least 8 (a module's header), got %d", m.ModuleBytes)
	case l.CompileTimeout <= 0:
		return invalid("plugin_limits.compile_timeout", "must be positive, got %v", l.CompileTimeout)
	case l.InitBudget <= 0:
		return invalid("plugin_limits.init_budget", "must be positive, got %v", l.InitBudget)
	}
	return nil
}

func (c *Config) validatePipelines(ch Checker) error {
	names := slices.Sorted(maps.Keys(c.Pipelines))
	switch {
	case c.DefaultPipeline != "":
		if _, ok := c.Pipelines[c.DefaultPipeline]; !ok {
			return invalid("default_pipeline", "no pipeline named %q (pipelines: %s)", c.DefaultPipeline, list(names))
		}
	case len(names) == 1:
		c.DefaultPipeline = names[0]
	case len(names) > 1:
		return invalid("pipelines", "there are %d pipelines, so default_pipeline must name one of: %s", len(names), list(names))
	}
	for _, name := range names {
		at := join("pipelines", name)
		if name == "" {
			return invalid(at, "pipeline name is empty")
		}
		r := c.Pipelines[name]
		if err := r.validate(at, ch); err != nil {
			return err
		}
	}
	return nil
}

// validateStages checks the stages of one direction of a route, at is
// their key path.
func validateStages(at string, stages []Stage, ch Checker) error {
	for i, st := range stages {
		at := fmt.Sprintf("%s[%d]", at, i)
		if strings.TrimSpace(st.Plugin) == "" {
			return invalid(at+".plugin", "missing; name a stock plugin, a NAME.wasm in plugins_dir or a path to a .wasm file")
		}
		if st.BudgetMs < 0 {
			return invalid(at+".budget_ms", "must be positive, got %d", st.BudgetMs)
		}
		if ch != nil {
			if key, err := ch.CheckStage(st); err != nil {
				return checked(at, key, err)
			}
		}
	}
	return nil
}

// list shows pipeline names for an error message, spelt as in key paths.
func list(names []string) string {
	if len(names) == 0 {
		return "none defined"
	}
	shown := make([]string, len(names))
	for i, name := range names {
		shown[i] = join("", name)
	}
	return strings.Join(shown, ", ")
}

// ResolvedTokens returns the tokens that admit a call: Auth.Tokens and the
// comma-separated tokens of the variable Auth.TokensEnv names, trimmed,
// with empty ones dropped. It reads the environment when called, not when
// the file is loaded. No tokens means no auth.
func (c *Config) ResolvedTokens() []string {
	return resolveTokens(c.Auth.Tokens, c.Auth.TokensEnv)
}

// ResolvedAdminTokens returns the tokens the admin API accepts, read as
// ResolvedTokens reads the call tokens.
func (c *Config) ResolvedAdminTokens() []string {
	return resolveTokens(c.Admin.Tokens, c.Admin.TokensEnv)
}

func resolveTokens(listed []string, envVar string) []string {
	var env []string
	if envVar != "" {
		env = strings.Split(os.Getenv(envVar), ",")
	}
	var tokens []string
	for _, t := range slices.Concat(listed, env) {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, t)
		}
	}
	return tokens
}
