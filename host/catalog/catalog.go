// Package catalog turns the plugin references people write (a stock name,
// a name in the plugin directory, a path to a .wasm file) into loaded
// plugins, loading each module once, and builds pipeline definitions from
// stage specs.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/plugins"
)

// Catalog resolves and caches plugins. It is safe for concurrent use.
type Catalog struct {
	rt  *plugin.Runtime
	dir string

	mu     sync.Mutex
	loaded map[string]*plugin.Plugin
}

// New makes a catalog over the runtime; dir, if not empty, is searched for
// NAME.wasm before the stock plugins.
func New(rt *plugin.Runtime, dir string) *Catalog {
	return &Catalog{rt: rt, dir: dir, loaded: map[string]*plugin.Plugin{}}
}

// Runtime is the runtime the catalog loads into.
func (c *Catalog) Runtime() *plugin.Runtime { return c.rt }

// Resolve loads the plugin a reference names, once.
func (c *Catalog) Resolve(ctx context.Context, ref string) (*plugin.Plugin, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.loaded[ref]; ok {
		return p, nil
	}
	name, wasm, err := c.read(ref)
	if err != nil {
		return nil, err
	}
	p, err := c.rt.Load(ctx, name, wasm)
	if err != nil {
		return nil, err
	}
	c.loaded[ref] = p
	return p, nil
}

func (c *Catalog) read(ref string) (name string, wasm []byte, err error) {
	if strings.HasSuffix(ref, ".wasm") || strings.ContainsRune(ref, filepath.Separator) {
		wasm, err := os.ReadFile(ref)
		if err != nil {
			return "", nil, fmt.Errorf("plugin %s: %w", ref, err)
		}
		return filepath.Base(ref), wasm, nil
	}
	if c.dir != "" {
		path := filepath.Join(c.dir, ref+".wasm")
		wasm, err := os.ReadFile(path)
		if err == nil {
			return ref + ".wasm", wasm, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, fmt.Errorf("plugin %s: %w", ref, err)
		}
	}
	if wasm, ok := plugins.Get(ref); ok {
		return ref, wasm, nil
	}
	where := ""
	if c.dir != "" {
		where = fmt.Sprintf(", no %s", filepath.Join(c.dir, ref+".wasm"))
	}
	return "", nil, fmt.Errorf("unknown plugin %q: not a stock plugin (%s)%s, and not a path to a .wasm file",
		ref, strings.Join(plugins.Names(), ", "), where)
}

// Definition resolves every stage of a pipeline.
func (c *Catalog) Definition(ctx context.Context, name string, specs []pipeline.StageSpec) (*pipeline.Definition, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("pipeline %s has no stages", name)
	}
	def := &pipeline.Definition{Name: name}
	for i, s := range specs {
		p, err := c.Resolve(ctx, s.Plugin)
		if err != nil {
			return nil, fmt.Errorf("pipeline %s, stage %d: %w", name, i+1, err)
		}
		cfg, err := s.ConfigJSON()
		if err != nil {
			return nil, fmt.Errorf("pipeline %s, stage %d: %w", name, i+1, err)
		}
		policy, err := pipeline.ParsePolicy(s.OnError)
		if err != nil {
			return nil, fmt.Errorf("pipeline %s, stage %d (%s): %w", name, i+1, s.Plugin, err)
		}
		def.Stages = append(def.Stages, pipeline.StageDef{Plugin: p, Config: cfg, OnError: policy})
	}
	return def, nil
}

// Close releases every plugin the catalog loaded.
func (c *Catalog) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for ref, p := range c.loaded {
		errs = append(errs, p.Close(ctx))
		delete(c.loaded, ref)
	}
	return errors.Join(errs...)
}
