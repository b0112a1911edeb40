package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/server"
)

// ManagerOptions describe what a Manager takes over.
type ManagerOptions struct {
	// Catalog resolved the routes' plugins.
	Catalog *catalog.Catalog
	// Server serves the routes.
	Server *server.Server
	// Routes, Built and DefaultRoute are what the server was started
	// with: the specs, the routes BuildRoutes made of them, and the
	// default.
	Routes       map[string]RouteSpec
	Built        map[string]*server.Route
	DefaultRoute string
	// Logger receives one line per plugin or route change; nil means
	// slog.Default().
	Logger *slog.Logger
}

// RouteSpec is what a route is made of, kept so that the route can be
// built again when a plugin it uses changes: the stages of each direction
// and the bot leg.
type RouteSpec struct {
	// Inbound are the stages of the caller's audio; at least one.
	Inbound []pipeline.StageSpec
	// Outbound are the stages of what the caller hears; none passes it
	// on unchanged.
	Outbound []pipeline.StageSpec
	// Upstream is the bot calls are relayed to; nil makes an echo. Its
	// header values are credentials: the manager never shows them.
	Upstream *server.Upstream
	// OverQuota is what happens to a call over its CPU quota.
	OverQuota server.QuotaPolicy
	// Recording records the route's calls; nil records nothing.
	Recording *recording.Spec
}

// uses says whether a stage of either direction references ref.
func (r RouteSpec) uses(ref string) bool {
	is := func(s pipeline.StageSpec) bool { return s.Plugin == ref }
	return slices.ContainsFunc(r.Inbound, is) || slices.ContainsFunc(r.Outbound, is)
}

// Manager changes plugins and routes while calls run. Every change goes
// through one path: load and validate the new modules, rebuild the
// pipelines that use them, in either direction of a route, have the server
// instantiate each route once (server.SetRoutes), and only then make the
// new versions current. Any failure leaves every plugin and route as it
// was. Changes are serialized; it is safe for concurrent use.
type Manager struct {
	cat *catalog.Catalog
	srv *server.Server
	log *slog.Logger

	pluginReloads   *prometheus.CounterVec
	pipelineReloads *prometheus.CounterVec

	mu          sync.Mutex
	specs       map[string]RouteSpec
	routes      map[string]*server.Route
	defaultName string
	rejected    map[string]Rejection
}

// Rejection is the last module refused for a name, kept until the name
// loads or is deleted.
type Rejection struct {
	Name   string    `json:"name"`
	SHA256 string    `json:"sha256,omitempty"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// NewManager takes over a running server's routes and registers the
// reload counters on the server's metrics.
func NewManager(opts ManagerOptions) (*Manager, error) {
	if opts.Catalog == nil || opts.Server == nil {
		return nil, errors.New("admin: a manager needs a catalog and a server")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Manager{
		cat: opts.Catalog,
		srv: opts.Server,
		log: opts.Logger,
		pluginReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_plugin_reloads_total",
			Help: "New plugin versions offered while serving (upload, plugin directory, reload), by result: ok or rejected.",
		}, []string{"result"}),
		pipelineReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxhost_pipeline_reloads_total",
			Help: "Pipeline sets reloaded from the config file, by result: ok or rejected.",
		}, []string{"result"}),
		specs:       maps.Clone(opts.Routes),
		routes:      maps.Clone(opts.Built),
		defaultName: opts.DefaultRoute,
		rejected:    map[string]Rejection{},
	}
	for _, r := range []string{"ok", "rejected"} {
		m.pluginReloads.WithLabelValues(r)
		m.pipelineReloads.WithLabelValues(r)
	}
	reg := opts.Server.Registry()
	if err := reg.Register(m.pluginReloads); err != nil {
		return nil, fmt.Errorf("admin: %w", err)
	}
	if err := reg.Register(m.pipelineReloads); err != nil {
		reg.Unregister(m.pluginReloads)
		return nil, fmt.Errorf("admin: %w", err)
	}
	return m, nil
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fileHash is the SHA-256 of a file, or "" if it cannot be read.
func fileHash(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return hashOf(b)
}
