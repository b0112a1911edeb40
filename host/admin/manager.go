package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/plugins"
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

// RejectedError is a plugin or pipeline set that was refused; what was
// there before stays.
type RejectedError struct {
	// Plugin names the plugin refused, empty for a pipeline reload.
	Plugin string
	// Reason says why, in words a person can act on.
	Reason string
	// Problems lists every validation problem, when the module was invalid.
	Problems []string
	// err is the cause.
	err error
}

func (e *RejectedError) Error() string { return e.Reason }
func (e *RejectedError) Unwrap() error { return e.err }

func rejected(name string, err error) *RejectedError {
	re := &RejectedError{Plugin: name, Reason: err.Error(), err: err}
	var ve *plugin.ValidationError
	if errors.As(err, &ve) {
		re.Problems = ve.Problems
	}
	return re
}

// InUseError refuses to delete a plugin that routes use, in either
// direction.
type InUseError struct {
	Plugin    string
	Pipelines []string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("plugin %s is used by pipeline %s: change those pipelines in the config file and reload first",
		e.Plugin, strings.Join(e.Pipelines, ", "))
}

// NotFoundError is a name that no plugin has.
type NotFoundError struct{ Plugin, Reason string }

func (e *NotFoundError) Error() string { return e.Reason }

// BadRequestError is a request that cannot be carried out as asked.
type BadRequestError struct{ Reason string }

func (e *BadRequestError) Error() string { return e.Reason }

// PluginInfo describes the current version of a plugin.
type PluginInfo struct {
	Name   string         `json:"name"`
	SHA256 string         `json:"sha256"`
	Size   int            `json:"size"`
	Source catalog.Source `json:"source"`
	Path   string         `json:"path,omitempty"`
	// LoadedAt is when this version was compiled and validated; nil for a
	// stock plugin no pipeline has needed yet.
	LoadedAt *time.Time `json:"loaded_at,omitempty"`
	// UsedBy are the pipelines whose new calls run this version.
	UsedBy []string `json:"used_by"`
}

// Plugins lists every loaded plugin and every stock plugin, by name, and
// the modules refused since.
func (m *Manager) Plugins() ([]PluginInfo, []Rejection) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PluginInfo
	seen := map[string]bool{}
	for _, v := range m.cat.Versions() {
		seen[v.Ref] = true
		out = append(out, m.info(v))
	}
	for _, name := range plugins.Names() {
		if seen[name] {
			continue
		}
		wasm, _ := plugins.Get(name)
		out = append(out, PluginInfo{Name: name, SHA256: hashOf(wasm), Size: len(wasm), Source: catalog.SourceStock, UsedBy: []string{}})
	}
	slices.SortFunc(out, func(a, b PluginInfo) int { return strings.Compare(a.Name, b.Name) })
	rej := slices.SortedFunc(maps.Values(m.rejected), func(a, b Rejection) int { return strings.Compare(a.Name, b.Name) })
	return out, rej
}

// Plugin describes one plugin's current version.
func (m *Manager) Plugin(name string) (PluginInfo, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.cat.Current(name); ok {
		return m.info(v), true
	}
	if wasm, ok := plugins.Get(name); ok {
		return PluginInfo{Name: name, SHA256: hashOf(wasm), Size: len(wasm), Source: catalog.SourceStock, UsedBy: m.usedBy(name)}, true
	}
	return PluginInfo{}, false
}

func (m *Manager) info(v *catalog.Version) PluginInfo {
	at := v.LoadedAt
	return PluginInfo{Name: v.Ref, SHA256: v.SHA256, Size: v.Size, Source: v.Source, Path: v.Path, LoadedAt: &at, UsedBy: m.usedBy(v.Ref)}
}

// StageInfo is one stage of a pipeline as new calls get it.
type StageInfo struct {
	Plugin   string         `json:"plugin"`
	SHA256   string         `json:"sha256"`
	Config   map[string]any `json:"config,omitempty"`
	OnError  string         `json:"on_error,omitempty"`
	BudgetMs int            `json:"budget_ms,omitempty"`
	// Cost is the stage's sampled time per frame over the route's calls
	// since the host started; absent before its first timed frame.
	Cost *CostInfo `json:"cost,omitempty"`
	// name is the loaded plugin's name, its metrics' plugin label.
	name string
}

// PipelineInfo is a route new calls may ask for.
type PipelineInfo struct {
	Name    string `json:"name"`
	Default bool   `json:"default"`
	// Stages are the inbound stages, under the name they had when a
	// route was one list of stages.
	Stages []StageInfo `json:"stages"`
	// Outbound are the stages of what the caller hears.
	Outbound []StageInfo `json:"outbound,omitempty"`
	// Upstream is the bot the route relays calls to; absent for an echo.
	Upstream *UpstreamInfo `json:"upstream,omitempty"`
}

// UpstreamInfo describes a route's bot leg. It names the headers sent
// with the dial but never shows their values, which carry credentials.
type UpstreamInfo struct {
	// URL is the template as configured, placeholders unfilled.
	URL      string `json:"url"`
	Protocol string `json:"protocol"`
	Codec    string `json:"codec"`
	Rate     int    `json:"rate"`
	// Headers are the names of the headers sent, canonical and sorted.
	Headers        []string          `json:"headers"`
	Options        map[string]string `json:"options,omitempty"`
	ConnectTimeout string            `json:"connect_timeout"`
	OnFailure      string            `json:"on_failure"`
}

// Pipelines lists the routes new calls may ask for, and the default.
func (m *Manager) Pipelines() ([]PipelineInfo, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PipelineInfo
	for _, name := range slices.Sorted(maps.Keys(m.specs)) {
		spec := m.specs[name]
		out = append(out, PipelineInfo{Name: name, Default: name == m.defaultName,
			Stages: m.stageInfos(spec.Inbound), Outbound: m.stageInfos(spec.Outbound), Upstream: upstreamInfo(spec.Upstream)})
	}
	return out, m.defaultName
}

// Route returns the route new calls named name get (the default for
// ""), built: the pipeline definitions those calls instantiate.
func (m *Manager) Route(name string) (*server.Route, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == "" {
		name = m.defaultName
	}
	r, ok := m.routes[name]
	return r, ok
}

// stageInfos describes stages with the versions new calls get. Called with
// m.mu held.
func (m *Manager) stageInfos(stages []pipeline.StageSpec) []StageInfo {
	var out []StageInfo
	for _, st := range stages {
		si := StageInfo{Plugin: st.Plugin, Config: st.Config, OnError: st.OnError, BudgetMs: st.BudgetMs}
		if v, ok := m.cat.Current(st.Plugin); ok {
			si.SHA256, si.name = v.SHA256, v.Plugin.Name()
		}
		out = append(out, si)
	}
	return out
}

func upstreamInfo(u *server.Upstream) *UpstreamInfo {
	if u == nil {
		return nil
	}
	timeout := u.ConnectTimeout
	if timeout == 0 {
		timeout = server.DefaultConnectTimeout
	}
	return &UpstreamInfo{URL: u.URL, Protocol: u.Dialect.Name(), Codec: u.Format.Encoding.String(), Rate: u.Format.Rate,
		Headers: append([]string{}, slices.Sorted(maps.Keys(u.Header))...), Options: u.Options, ConnectTimeout: timeout.String(), OnFailure: u.OnFailure.String()}
}

// usedBy names the routes with a stage, in either direction, that
// references ref. Called with m.mu held.
func (m *Manager) usedBy(ref string) []string {
	used := []string{}
	for name, spec := range m.specs {
		if spec.uses(ref) {
			used = append(used, name)
		}
	}
	slices.Sort(used)
	return used
}

// BuildRoutes makes the server routes of specs, resolving every plugin
// through cat: what a server starts with, before a Manager takes it over.
func BuildRoutes(ctx context.Context, cat *catalog.Catalog, specs map[string]RouteSpec) (map[string]*server.Route, error) {
	routes, _, err := buildRoutes(ctx, cat, specs, nil, nil, nil)
	return routes, err
}

// buildRoutes makes a server route of each spec. A route whose spec is
// prevSpecs' and whose plugins overlay does not replace is prev's route; in
// the others, a direction whose stages are unchanged and whose plugins
// overlay does not replace keeps prev's pipeline definition, and the rest
// are built with overlay's versions in place of the current ones. It
// returns the routes and the names of those that are new or differ from
// prev's.
func buildRoutes(ctx context.Context, cat *catalog.Catalog, specs, prevSpecs map[string]RouteSpec, prev map[string]*server.Route,
	overlay map[string]*catalog.Version) (map[string]*server.Route, []string, error) {
	routes := make(map[string]*server.Route, len(specs))
	var changed []string
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		spec, prevSpec, old := specs[name], prevSpecs[name], prev[name]
		if old == nil {
			old = &server.Route{}
		} else if reflect.DeepEqual(spec, prevSpec) && !replaced(spec.Inbound, overlay) && !replaced(spec.Outbound, overlay) {
			routes[name] = old
			continue
		}
		in, err := definition(ctx, cat, name, spec.Inbound, prevSpec.Inbound, old.Inbound, overlay)
		if err != nil {
			return nil, nil, err
		}
		out, err := definition(ctx, cat, name+" (outbound)", spec.Outbound, prevSpec.Outbound, old.Outbound, overlay)
		if err != nil {
			return nil, nil, err
		}
		routes[name] = &server.Route{Name: name, Inbound: in, Outbound: out, Upstream: spec.Upstream, OverQuota: spec.OverQuota, Recording: spec.Recording}
		changed = append(changed, name)
	}
	return routes, changed, nil
}

// replaced says whether overlay has a new version of a plugin of stages.
func replaced(stages []pipeline.StageSpec, overlay map[string]*catalog.Version) bool {
	return slices.ContainsFunc(stages, func(s pipeline.StageSpec) bool { return overlay[s.Plugin] != nil })
}

// definition returns the pipeline definition of stages: old, when stages
// are oldStages and overlay replaces none of their plugins, or one built
// now. No stages make no definition.
func definition(ctx context.Context, cat *catalog.Catalog, name string, stages, oldStages []pipeline.StageSpec, old *pipeline.Definition,
	overlay map[string]*catalog.Version) (*pipeline.Definition, error) {
	switch {
	case len(stages) == 0:
		return nil, nil
	case old != nil && reflect.DeepEqual(stages, oldStages) && !replaced(stages, overlay):
		return old, nil
	}
	return cat.DefinitionWith(ctx, name, stages, overlay)
}

// apply rebuilds every route of specs that is new, changed, or uses a
// reference in overlay; has the server instantiate and swap in the new set;
// and on success installs the overlay's versions. It returns the routes
// rebuilt. On error nothing has changed; the caller discards the overlay.
// Called with m.mu held.
func (m *Manager) apply(ctx context.Context, overlay map[string]*catalog.Version, specs map[string]RouteSpec, defaultName string) ([]string, error) {
	routes, rebuilt, err := buildRoutes(ctx, m.cat, specs, m.specs, m.routes, overlay)
	if err != nil {
		return nil, err
	}
	if err := m.srv.SetRoutes(ctx, routes, defaultName); err != nil {
		return nil, err
	}
	m.cat.Install(slices.Collect(maps.Values(overlay))...)
	m.specs, m.routes, m.defaultName = specs, routes, defaultName
	return rebuilt, nil
}

// Refresh rereads NAME.wasm from the plugin directory (or, if it is gone,
// the stock plugin of that name) and, if its SHA-256 changed, validates
// it, rebuilds the pipelines that use it and makes it current for new
// calls. The plugin directory watcher calls it; so may anyone. A module
// that fails is logged and counted as rejected, and the old version stays.
// A file that disappears takes its plugin with it unless pipelines use the
// plugin: they keep the loaded version, with a warning.
func (m *Manager) Refresh(ctx context.Context, name string) error {
	// Reading and compiling the module is the slow part, and it holds no
	// lock of the manager's: uploads, reloads and the watcher go on.
	v, changed, err := m.cat.Reread(ctx, name)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refreshed(ctx, name, v, changed, err, "plugins_dir")
}

// refreshed acts on what Reread found. Called with m.mu held.
func (m *Manager) refreshed(ctx context.Context, name string, v *catalog.Version, changed bool, err error, via string) error {
	cur, _ := m.cat.Current(name)
	if errors.Is(err, catalog.ErrNotFound) {
		delete(m.rejected, name)
		if cur == nil {
			return nil
		}
		if used := m.usedBy(name); len(used) > 0 {
			m.log.Warn("plugin file removed; the pipelines that use it keep the loaded version until they are changed",
				"name", name, "sha256", cur.SHA256, "pipelines", strings.Join(used, ","))
			return nil
		}
		m.cat.Remove(name)
		m.log.Info("plugin removed", "name", name, "sha256", cur.SHA256, "via", via)
		return nil
	}
	if err != nil {
		return m.reject(name, fileHash(m.cat.DirPath(name)), cur, err, via)
	}
	if !changed {
		return nil
	}
	if cur != nil && cur.SHA256 == v.SHA256 {
		// Another change made the same module current while it compiled.
		m.cat.Discard(ctx, v)
		return nil
	}
	return m.offer(ctx, v, cur, via)
}

// offer makes a loaded, validated version current, rebuilding the
// pipelines that use it; or rejects it. Called with m.mu held.
func (m *Manager) offer(ctx context.Context, v, cur *catalog.Version, via string) error {
	used := m.usedBy(v.Ref)
	if len(used) == 0 {
		m.cat.Install(v)
	} else if _, err := m.apply(ctx, map[string]*catalog.Version{v.Ref: v}, m.specs, m.defaultName); err != nil {
		m.cat.Discard(ctx, v)
		return m.reject(v.Ref, v.SHA256, cur, err, via)
	}
	delete(m.rejected, v.Ref)
	m.pluginReloads.WithLabelValues("ok").Inc()
	msg := "plugin reloaded"
	if cur == nil {
		msg = "plugin loaded"
	}
	m.log.Info(msg, "name", v.Ref, "sha256", v.SHA256, "pipelines", strings.Join(used, ","), "source", v.Source, "via", via)
	return nil
}

// reject logs, counts and remembers a refused module. Called with m.mu
// held.
func (m *Manager) reject(name, sha string, kept *catalog.Version, err error, via string) error {
	m.pluginReloads.WithLabelValues("rejected").Inc()
	re := rejected(name, err)
	m.rejected[name] = Rejection{Name: name, SHA256: sha, Reason: re.Reason, At: time.Now()}
	attrs := []any{"name", name, "reason", re.Reason, "via", via}
	if sha != "" {
		attrs = append(attrs, "sha256", sha)
	}
	if kept != nil {
		attrs = append(attrs, "kept_sha256", kept.SHA256)
	}
	m.log.Warn("plugin rejected", attrs...)
	return re
}

// Rescan refreshes every NAME.wasm in the plugin directory, and every
// plugin that came from it whose file is gone.
func (m *Manager) Rescan(ctx context.Context) error {
	dir := m.cat.Dir()
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, e := range entries {
		if name, ok := dirPluginName(e.Name()); ok && !e.IsDir() {
			names[name] = true
		}
	}
	for _, v := range m.cat.Versions() {
		if v.Source == catalog.SourcePluginsDir {
			names[v.Ref] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		_ = m.Refresh(ctx, name)
	}
	return nil
}

// dirPluginName is the plugin a file in the plugin directory holds, if it
// holds one: NAME.wasm, not hidden (editors' and uploads' temporary files
// are).
func dirPluginName(file string) (string, bool) {
	name, ok := strings.CutSuffix(file, ".wasm")
	return name, ok && name != "" && !strings.HasPrefix(file, ".")
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

func checkName(name string) error {
	switch {
	case strings.HasSuffix(name, ".wasm"):
		return &BadRequestError{fmt.Sprintf("plugin name %q ends in .wasm: name the plugin as pipelines reference it, e.g. PUT /plugins/%s", name, strings.TrimSuffix(name, ".wasm"))}
	case !validName.MatchString(name):
		return &BadRequestError{fmt.Sprintf("plugin name %q is not valid: use 1 to 100 letters, digits, '_', '-' or '.', starting with a letter or digit", name)}
	}
	return nil
}

// UploadResult says what an upload changed.
type UploadResult struct {
	PluginInfo
	// Created is true when no version of the name was loaded before.
	Created bool `json:"created"`
	// Unchanged is true when the module was the current version already.
	Unchanged bool `json:"unchanged"`
	// Previous is the SHA-256 of the version replaced.
	Previous string `json:"previous_sha256,omitempty"`
	// Pipelines are the pipelines rebuilt with the new version.
	Pipelines []string `json:"pipelines_reloaded"`
}

// Upload validates wasm as the new version of plugin NAME and, if valid and
// every pipeline that uses NAME accepts it, makes it current: new calls get
// it, calls in flight keep theirs. With a plugin directory the module is
// written to NAME.wasm (atomically: a temporary file renamed into place),
// so it survives a restart; without one it is kept in memory. A version
// uploaded under the name of a stock plugin overrides it, as NAME.wasm in
// the plugin directory does.
func (m *Manager) Upload(ctx context.Context, name string, wasm []byte) (UploadResult, error) {
	if err := checkName(name); err != nil {
		return UploadResult{}, err
	}
	source := catalog.SourceUpload
	if m.cat.Dir() != "" {
		source = catalog.SourcePluginsDir
	}
	unchanged := func(cur *catalog.Version) bool {
		return cur != nil && cur.SHA256 == hashOf(wasm) && cur.Source == source
	}
	// Compiling is the slow part, and it holds no lock of the manager's:
	// other uploads, reloads and the watcher go on meanwhile.
	var v *catalog.Version
	var err error
	if cur, _ := m.cat.Current(name); !unchanged(cur) {
		v, err = m.cat.Load(ctx, name, wasm, source)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, _ := m.cat.Current(name)
	if unchanged(cur) {
		if v != nil {
			m.cat.Discard(ctx, v)
		}
		if source == catalog.SourcePluginsDir {
			if err := writeAtomic(m.cat.DirPath(name), wasm, nil); err != nil {
				return UploadResult{}, err
			}
		}
		return UploadResult{PluginInfo: m.info(cur), Unchanged: true, Previous: cur.SHA256, Pipelines: []string{}}, nil
	}
	if v == nil && err == nil {
		// The module was current when the upload began and no longer is.
		v, err = m.cat.Load(ctx, name, wasm, source)
	}
	if err != nil {
		return UploadResult{}, m.reject(name, hashOf(wasm), cur, err, "upload")
	}
	install := func() ([]string, error) {
		used := m.usedBy(name)
		if len(used) == 0 {
			m.cat.Install(v)
			return []string{}, nil
		}
		if _, err := m.apply(ctx, map[string]*catalog.Version{name: v}, m.specs, m.defaultName); err != nil {
			return nil, m.reject(name, v.SHA256, cur, err, "upload")
		}
		return used, nil
	}
	var rebuilt []string
	if source == catalog.SourcePluginsDir {
		// The file is renamed into place only once the pipelines took the
		// new version, so a refused module never reaches the disk, and the
		// watcher, which waits for m.mu, finds the file already current.
		err = writeAtomic(m.cat.DirPath(name), wasm, func() error {
			var err error
			rebuilt, err = install()
			return err
		})
		if err != nil && rebuilt != nil {
			// The rename failed after the swap: put the old version back.
			m.restore(ctx, name, cur)
		}
	} else {
		rebuilt, err = install()
	}
	if err != nil {
		m.cat.Discard(ctx, v)
		return UploadResult{}, err
	}
	delete(m.rejected, name)
	m.pluginReloads.WithLabelValues("ok").Inc()
	msg, res := "plugin reloaded", UploadResult{PluginInfo: m.info(v), Created: cur == nil, Pipelines: rebuilt}
	if cur == nil {
		msg = "plugin loaded"
	} else {
		res.Previous = cur.SHA256
	}
	m.log.Info(msg, "name", name, "sha256", v.SHA256, "pipelines", strings.Join(rebuilt, ","), "source", v.Source, "via", "upload")
	return res, nil
}

// restore makes cur current again after a failed upload. Called with m.mu
// held.
func (m *Manager) restore(ctx context.Context, name string, cur *catalog.Version) {
	if cur == nil {
		m.cat.Remove(name)
		return
	}
	if len(m.usedBy(name)) == 0 {
		m.cat.Install(cur)
		return
	}
	if _, err := m.apply(ctx, map[string]*catalog.Version{name: cur}, m.specs, m.defaultName); err != nil {
		m.log.Error("could not restore the previous plugin version", "name", name, "sha256", cur.SHA256, "err", err)
	}
}

// writeAtomic writes data to a temporary file beside path, syncs it, runs
// commit (if not nil) and, if commit succeeds, renames the file to path.
func writeAtomic(path string, data []byte, commit func() error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".voxhost-upload-*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write to the plugin directory: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	if commit != nil {
		if err = commit(); err != nil {
			return err
		}
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot move the upload into place as %s: %w", path, err)
	}
	return nil
}

// Delete removes plugin NAME: its file in the plugin directory, or the
// version uploaded into memory. A plugin that pipelines use is refused with
// an *InUseError; a stock plugin cannot be deleted. Where NAME.wasm
// overrode a stock plugin, the stock plugin serves the name again.
func (m *Manager) Delete(ctx context.Context, name string) (PluginInfo, error) {
	if err := checkName(name); err != nil {
		return PluginInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if used := m.usedBy(name); len(used) > 0 {
		return PluginInfo{}, &InUseError{Plugin: name, Pipelines: used}
	}
	cur, loaded := m.cat.Current(name)
	removedFile := false
	if path := m.cat.DirPath(name); path != "" {
		switch err := os.Remove(path); {
		case err == nil:
			removedFile = true
		case !errors.Is(err, fs.ErrNotExist):
			return PluginInfo{}, fmt.Errorf("cannot delete %s: %w", path, err)
		}
	}
	_, stock := plugins.Get(name)
	if !removedFile && (!loaded || cur.Source == catalog.SourceStock || cur.Source == catalog.SourcePath) {
		if stock {
			return PluginInfo{}, &BadRequestError{fmt.Sprintf("plugin %s is a stock plugin, built into voxhost: it cannot be deleted", name)}
		}
		if _, wasRejected := m.rejected[name]; !wasRejected {
			where := "no such plugin was uploaded"
			if m.cat.Dir() != "" {
				where = fmt.Sprintf("there is no %s", m.cat.DirPath(name))
			}
			return PluginInfo{}, &NotFoundError{Plugin: name, Reason: fmt.Sprintf("no plugin %s: %s", name, where)}
		}
	}
	delete(m.rejected, name)
	info := PluginInfo{Name: name, UsedBy: []string{}}
	if loaded {
		info = m.info(cur)
		m.cat.Remove(name)
	}
	m.log.Info("plugin removed", "name", name, "sha256", info.SHA256, "via", "admin")
	return info, nil
}

// ReloadReport says what a route reload changed.
type ReloadReport struct {
	// Default is the default route now.
	Default string `json:"default"`
	// Pipelines are all the routes new calls may ask for now.
	Pipelines []string `json:"pipelines"`
	// Added, Removed and Rebuilt are the routes that are new, gone, or
	// rebuilt because their stages (in either direction), their upstream
	// or their plugins changed.
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Rebuilt []string `json:"rebuilt"`
	// Plugins are the plugins whose files changed and were reloaded.
	Plugins []PluginInfo `json:"plugins_reloaded"`
	// RestartRequired lists changed configuration keys that only take
	// effect when voxhost restarts (filled in by the caller that read the
	// file).
	RestartRequired []string `json:"restart_required,omitempty"`
}

// ReloadFailed logs and counts a route reload that failed before it
// reached SetRoutes, e.g. because the config file does not parse.
func (m *Manager) ReloadFailed(err error) {
	m.pipelineReloads.WithLabelValues("rejected").Inc()
	m.log.Warn("pipeline reload rejected; the old pipelines stay", "reason", err.Error())
}

// SetRoutes replaces the named routes, as after editing the config file.
// The plugin files the routes name in either direction (in the plugin
// directory or by path) are reread too, and those whose SHA-256 changed
// are reloaded. Each route that is new or changed is built, and the server
// instantiates every route once before the swap; any failure leaves the old
// routes and plugins in place and returns a *RejectedError. Calls in
// flight keep their routes.
func (m *Manager) SetRoutes(ctx context.Context, specs map[string]RouteSpec, defaultName string) (*ReloadReport, error) {
	fail := func(err error) (*ReloadReport, error) {
		m.ReloadFailed(err)
		return nil, &RejectedError{Reason: err.Error(), err: err}
	}
	if len(specs) == 0 {
		return fail(errors.New("no pipelines defined: keep at least one"))
	}
	if _, ok := specs[defaultName]; !ok {
		return fail(fmt.Errorf("default pipeline %q is not defined (have %s)", defaultName, strings.Join(slices.Sorted(maps.Keys(specs)), ", ")))
	}
	// Reading and compiling the modules is the slow part, and it holds no
	// lock of the manager's: uploads and the watcher go on meanwhile.
	overlay := map[string]*catalog.Version{}
	discard := func() { m.cat.Discard(ctx, slices.Collect(maps.Values(overlay))...) }
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		for _, st := range slices.Concat(specs[name].Inbound, specs[name].Outbound) {
			if overlay[st.Plugin] != nil {
				continue
			}
			if _, loaded := m.cat.Current(st.Plugin); !loaded {
				// A plugin no pipeline used yet: loading it changes nothing
				// a call sees, so it is loaded and kept now.
				if _, err := m.cat.ResolveVersion(ctx, st.Plugin); err != nil {
					discard()
					return fail(fmt.Errorf("pipeline %s: %w", name, err))
				}
				continue
			}
			v, changed, err := m.cat.Reread(ctx, st.Plugin)
			if errors.Is(err, catalog.ErrNotFound) {
				continue // keeps the loaded version, as Refresh does
			}
			if err != nil {
				discard()
				return fail(fmt.Errorf("pipeline %s: %w", name, err))
			}
			if changed {
				overlay[st.Plugin] = v
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	before := slices.Sorted(maps.Keys(m.specs))
	rebuilt, err := m.apply(ctx, overlay, maps.Clone(specs), defaultName)
	if err != nil {
		discard()
		return fail(err)
	}
	after := slices.Sorted(maps.Keys(m.specs))
	rep := &ReloadReport{Default: defaultName, Pipelines: after, Added: []string{}, Removed: []string{}, Rebuilt: []string{}, Plugins: []PluginInfo{}}
	for _, n := range after {
		if !slices.Contains(before, n) {
			rep.Added = append(rep.Added, n)
		} else if slices.Contains(rebuilt, n) {
			rep.Rebuilt = append(rep.Rebuilt, n)
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			rep.Removed = append(rep.Removed, n)
		}
	}
	for _, ref := range slices.Sorted(maps.Keys(overlay)) {
		v := overlay[ref]
		m.pluginReloads.WithLabelValues("ok").Inc()
		delete(m.rejected, ref)
		m.log.Info("plugin reloaded", "name", ref, "sha256", v.SHA256, "pipelines", strings.Join(m.usedBy(ref), ","), "source", v.Source, "via", "reload")
		rep.Plugins = append(rep.Plugins, m.info(v))
	}
	m.pipelineReloads.WithLabelValues("ok").Inc()
	m.log.Info("pipelines reloaded", "pipelines", strings.Join(after, ","), "default", defaultName,
		"added", strings.Join(rep.Added, ","), "removed", strings.Join(rep.Removed, ","), "rebuilt", strings.Join(rep.Rebuilt, ","))
	return rep, nil
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
