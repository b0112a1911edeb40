package admin

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/server"
)

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
	for _, name := range m.cat.StockNames() {
		if seen[name] {
			continue
		}
		wasm, _ := m.cat.Stock(name)
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
	if wasm, ok := m.cat.Stock(name); ok {
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
	// Reference says the stage asks for the far-end reference (its
	// plugin exports vox_reference, ABI §11): POST /run takes a far-end
	// file for it.
	Reference bool `json:"reference,omitempty"`
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
	// Recording is what the route records of its calls; absent when it
	// records nothing.
	Recording *RouteRecordingInfo `json:"recording,omitempty"`
}

// RouteRecordingInfo describes what a route records of its calls,
// defaults applied.
type RouteRecordingInfo struct {
	Dir          string   `json:"dir,omitempty"`
	What         []string `json:"what"`
	MaxSeconds   float64  `json:"max_seconds"`
	MinFreeBytes uint64   `json:"min_free_bytes"`
}

func recordingInfo(s *recording.Spec) *RouteRecordingInfo {
	if s == nil {
		return nil
	}
	info := &RouteRecordingInfo{Dir: s.Dir, What: []string{}, MaxSeconds: cmp.Or(s.MaxDuration, recording.DefaultMaxDuration).Seconds(),
		MinFreeBytes: cmp.Or(s.MinFreeBytes, recording.DefaultMinFreeBytes)}
	for _, st := range s.Recorded() {
		info.What = append(info.What, st.String())
	}
	return info
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
			Stages: m.stageInfos(spec.Inbound), Outbound: m.stageInfos(spec.Outbound), Upstream: upstreamInfo(spec.Upstream),
			Recording: recordingInfo(spec.Recording)})
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
			si.SHA256, si.name, si.Reference = v.SHA256, v.Plugin.Name(), v.Plugin.WantsReference()
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
