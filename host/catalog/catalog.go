// Package catalog turns the plugin references people write (a stock name,
// a name in the plugin directory, a path to a .wasm file) into loaded
// plugins, loading each module once, and builds pipeline definitions from
// stage specs.
//
// Every loaded plugin is a Version: the module's SHA-256, where it came
// from and when it was loaded. A reference can move to a new version while
// calls run (see Reread, Load, Install): the catalog compiles and validates
// the new module first, and the caller makes it current only once every
// pipeline that uses it has been rebuilt. Calls in flight keep the
// instances they made from the old version.
//
// A program that embeds voxhost uses it to build its routes from the stock
// plugins by name, or from its own modules, as examples/embed does.
package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/plugins"
)

// Source says where a version's module came from.
type Source string

// The sources of a version.
const (
	// SourceStock is a plugin built into the binary.
	SourceStock Source = "stock"
	// SourcePluginsDir is NAME.wasm in the plugin directory.
	SourcePluginsDir Source = "plugins_dir"
	// SourcePath is a .wasm file named by its path.
	SourcePath Source = "path"
	// SourceUpload is a module uploaded through the admin API and kept in
	// memory only, because no plugin directory is configured.
	SourceUpload Source = "upload"
)

// Version is one loaded module of a reference.
type Version struct {
	// Ref is the reference pipelines use: a stock name, a name in the
	// plugin directory or a path.
	Ref string
	// Plugin is the compiled, validated module, shared by every call.
	Plugin *plugin.Plugin
	// SHA256 is the hex SHA-256 of the module's bytes; it identifies the
	// version.
	SHA256 string
	// Size is the module's size in bytes.
	Size int
	// Source says where the module came from; Path is the file it was read
	// from, empty for stock plugins and uploads kept in memory.
	Source Source
	Path   string
	// LoadedAt is when the module was compiled and validated.
	LoadedAt time.Time

	closed bool // guarded by the catalog's mu
}

// RetireAfter is how long a replaced version stays open before the catalog
// closes it. Closing a module never disturbs the instances calls already
// made from it, but a call that picked its pipeline definition just before
// a swap still has to instantiate it; the grace leaves it ample time.
// Closing at all keeps a host that is reloaded often from accumulating
// compiled code.
var RetireAfter = time.Minute

// Catalog resolves and caches plugins. It is safe for concurrent use.
type Catalog struct {
	rt  *plugin.Runtime
	dir string

	mu      sync.Mutex
	loaded  map[string]*Version
	retired map[*Version]*time.Timer
	closed  bool
}

// New makes a catalog over the runtime; dir, if not empty, is searched for
// NAME.wasm before the stock plugins.
func New(rt *plugin.Runtime, dir string) *Catalog {
	return &Catalog{rt: rt, dir: dir, loaded: map[string]*Version{}, retired: map[*Version]*time.Timer{}}
}

// Runtime is the runtime the catalog loads into.
func (c *Catalog) Runtime() *plugin.Runtime { return c.rt }

// Dir is the plugin directory, or "" when there is none.
func (c *Catalog) Dir() string { return c.dir }

// Resolve loads the plugin a reference names, once.
func (c *Catalog) Resolve(ctx context.Context, ref string) (*plugin.Plugin, error) {
	v, err := c.ResolveVersion(ctx, ref)
	if err != nil {
		return nil, err
	}
	return v.Plugin, nil
}

// ResolveVersion is Resolve with what the catalog knows of the version.
//
// The module is read and compiled without the catalog's lock, so that a
// slow load holds up nothing else; of two loads of one reference at once,
// the first to finish is kept.
func (c *Catalog) ResolveVersion(ctx context.Context, ref string) (*Version, error) {
	if v, ok := c.Current(ref); ok {
		return v, nil
	}
	f, err := c.read(ref)
	if err != nil {
		return nil, err
	}
	v, err := c.load(ctx, ref, f)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	first, ok := c.loaded[ref]
	if !ok {
		c.loaded[ref] = v
	}
	c.mu.Unlock()
	if ok {
		_ = v.Plugin.Close(ctx)
		return first, nil
	}
	return v, nil
}

// Current returns the version a reference resolves to now, if it is loaded.
func (c *Catalog) Current(ref string) (*Version, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.loaded[ref]
	return v, ok
}

// Versions lists the current version of every loaded reference, by Ref.
func (c *Catalog) Versions() []*Version {
	c.mu.Lock()
	defer c.mu.Unlock()
	vs := make([]*Version, 0, len(c.loaded))
	for _, v := range c.loaded {
		vs = append(vs, v)
	}
	slices.SortFunc(vs, func(a, b *Version) int { return strings.Compare(a.Ref, b.Ref) })
	return vs
}

// ErrNotFound is wrapped by Reread when a reference names no module at all
// any more.
var ErrNotFound = errors.New("plugin not found")

// Reread reads the module a reference names now, as a fresh Resolve would
// (the plugin directory first, then the stock plugins; or the path), and
// compares its hash with the current version. When they differ it loads,
// validates and returns the new version without installing it (see
// Install and Discard); changed is then true. A reference whose current
// version was uploaded into memory is not reread. An error leaves the
// catalog as it was; a module that is not there any more wraps ErrNotFound.
func (c *Catalog) Reread(ctx context.Context, ref string) (v *Version, changed bool, err error) {
	c.mu.Lock()
	cur := c.loaded[ref]
	c.mu.Unlock()
	if cur != nil && cur.Source == SourceUpload {
		return cur, false, nil
	}
	f, err := c.read(ref)
	if err != nil {
		return nil, false, err
	}
	if cur != nil && cur.SHA256 == hashOf(f.wasm) {
		return cur, false, nil
	}
	v, err = c.load(ctx, ref, f)
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// Load compiles and validates wasm as a new version of a name in the plugin
// directory, without installing it. Source is SourcePluginsDir when the
// module is (or is about to be) the file dir/NAME.wasm, SourceUpload when
// it is kept in memory.
func (c *Catalog) Load(ctx context.Context, name string, wasm []byte, source Source) (*Version, error) {
	f := file{label: name + ".wasm", wasm: wasm, source: source}
	if source == SourcePluginsDir {
		f.path = c.DirPath(name)
	}
	return c.load(ctx, name, f)
}

// DirPath is where the plugin directory keeps NAME, or "" without one.
func (c *Catalog) DirPath(name string) string {
	if c.dir == "" {
		return ""
	}
	return filepath.Join(c.dir, name+".wasm")
}

// Install makes versions current. Versions they replace are closed after
// RetireAfter; calls already running on them are not affected.
func (c *Catalog) Install(vs ...*Version) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range vs {
		if old := c.loaded[v.Ref]; old != nil && old != v {
			c.retire(old)
		}
		if t, ok := c.retired[v]; ok {
			// Back before its grace ran out (an undone change).
			t.Stop()
			delete(c.retired, v)
		}
		c.loaded[v.Ref] = v
	}
}

// Remove forgets a reference; its version is closed after RetireAfter. A
// later Resolve reads the reference afresh.
func (c *Catalog) Remove(ref string) (*Version, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.loaded[ref]
	if ok {
		delete(c.loaded, ref)
		c.retire(v)
	}
	return v, ok
}

// Discard closes versions that were loaded but never installed.
func (c *Catalog) Discard(ctx context.Context, vs ...*Version) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range vs {
		if c.loaded[v.Ref] != v {
			if t, ok := c.retired[v]; ok {
				t.Stop()
				delete(c.retired, v)
			}
			_ = c.close(ctx, v)
		}
	}
}

// retire schedules v to be closed. Called with c.mu held.
func (c *Catalog) retire(v *Version) {
	if _, ok := c.retired[v]; ok || c.closed {
		return
	}
	c.retired[v] = time.AfterFunc(RetireAfter, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.retired[v]; !ok {
			return
		}
		delete(c.retired, v)
		if c.loaded[v.Ref] != v {
			_ = c.close(context.Background(), v)
		}
	})
}

// close closes a version once. Called with c.mu held.
func (c *Catalog) close(ctx context.Context, v *Version) error {
	if v.closed {
		return nil
	}
	v.closed = true
	return v.Plugin.Close(ctx)
}

// file is a module read from where a reference points.
type file struct {
	label  string // names the plugin in errors, logs and metrics
	wasm   []byte
	source Source
	path   string
}

func (c *Catalog) load(ctx context.Context, ref string, f file) (*Version, error) {
	p, err := c.rt.Load(ctx, f.label, f.wasm)
	if err != nil {
		return nil, err
	}
	return &Version{Ref: ref, Plugin: p, SHA256: hashOf(f.wasm), Size: len(f.wasm), Source: f.source, Path: f.path, LoadedAt: time.Now()}, nil
}

func hashOf(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])
}

// IsPath says whether a reference is a path to a .wasm file rather than a
// name.
func IsPath(ref string) bool {
	return strings.HasSuffix(ref, ".wasm") || strings.ContainsRune(ref, filepath.Separator)
}

func (c *Catalog) read(ref string) (file, error) {
	if IsPath(ref) {
		wasm, err := os.ReadFile(ref)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = notFound{err}
			}
			return file{}, fmt.Errorf("plugin %s: %w", ref, err)
		}
		return file{label: filepath.Base(ref), wasm: wasm, source: SourcePath, path: ref}, nil
	}
	if c.dir != "" {
		path := filepath.Join(c.dir, ref+".wasm")
		wasm, err := os.ReadFile(path)
		if err == nil {
			return file{label: ref + ".wasm", wasm: wasm, source: SourcePluginsDir, path: path}, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return file{}, fmt.Errorf("plugin %s: %w", ref, err)
		}
	}
	if wasm, ok := plugins.Get(ref); ok {
		return file{label: ref, wasm: wasm, source: SourceStock}, nil
	}
	where := ""
	if c.dir != "" {
		where = fmt.Sprintf(", no %s", filepath.Join(c.dir, ref+".wasm"))
	}
	return file{}, notFound{fmt.Errorf("unknown plugin %q: not a stock plugin (%s)%s, and not a path to a .wasm file",
		ref, strings.Join(plugins.Names(), ", "), where)}
}

// notFound keeps an error's message and makes it match ErrNotFound.
type notFound struct{ error }

func (e notFound) Unwrap() error        { return e.error }
func (e notFound) Is(target error) bool { return target == ErrNotFound }

// Definition resolves every stage of a pipeline.
func (c *Catalog) Definition(ctx context.Context, name string, specs []pipeline.StageSpec) (*pipeline.Definition, error) {
	return c.DefinitionWith(ctx, name, specs, nil)
}

// DefinitionWith is Definition with versions not yet installed taking the
// place of the current ones of their references.
func (c *Catalog) DefinitionWith(ctx context.Context, name string, specs []pipeline.StageSpec, overlay map[string]*Version) (*pipeline.Definition, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("pipeline %s has no stages", name)
	}
	def := &pipeline.Definition{Name: name}
	for i, s := range specs {
		v := overlay[s.Plugin]
		if v == nil {
			var err error
			if v, err = c.ResolveVersion(ctx, s.Plugin); err != nil {
				return nil, fmt.Errorf("pipeline %s, stage %d: %w", name, i+1, err)
			}
		}
		cfg, err := s.ConfigJSON()
		if err != nil {
			return nil, fmt.Errorf("pipeline %s, stage %d: %w", name, i+1, err)
		}
		policy, err := pipeline.ParsePolicy(s.OnError)
		if err != nil {
			return nil, fmt.Errorf("pipeline %s, stage %d (%s): %w", name, i+1, s.Plugin, err)
		}
		def.Stages = append(def.Stages, pipeline.StageDef{Plugin: v.Plugin, Config: cfg, OnError: policy, Budget: s.Budget()})
	}
	return def, nil
}

// Close releases every plugin the catalog loaded, retired ones included.
func (c *Catalog) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for ref, v := range c.loaded {
		errs = append(errs, c.close(ctx, v))
		delete(c.loaded, ref)
	}
	for v, t := range c.retired {
		t.Stop()
		errs = append(errs, c.close(ctx, v))
		delete(c.retired, v)
	}
	return errors.Join(errs...)
}
