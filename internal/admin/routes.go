package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/server"
)

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
