package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// DefaultMemoryLimitPages caps each instance's memory at 16 MiB.
const DefaultMemoryLimitPages = 256

// Options configures a Runtime.
type Options struct {
	// CacheDir holds compiled machine code across runs. Empty means
	// DefaultCacheDir; "-" disables the on-disk cache (memory only).
	CacheDir string
	// MemoryLimitPages caps each instance's linear memory, in 64 KiB pages.
	// Zero means DefaultMemoryLimitPages.
	MemoryLimitPages uint32
	// Logger receives the plugins' log lines. Nil means slog.Default().
	Logger *slog.Logger
}

// DefaultCacheDir is the compilation cache under the user's cache directory,
// or "" when the system has none.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "voxhost", "wazero")
}

// Runtime is the one WebAssembly runtime of a process. It is safe for
// concurrent use.
type Runtime struct {
	rt         wazero.Runtime
	cache      wazero.CompilationCache
	limitPages uint32
	logger     *slog.Logger
	live       atomic.Int64
	// wasiFuncs are the WASI functions plugins may import (see wasi.go);
	// memory allocates every instance's linear memory within limitPages.
	memory mmapAllocator
	// moduleConfig is the base configuration of every instance.
	wasiFuncs    map[string]api.FunctionDefinition
	moduleConfig wazero.ModuleConfig
}

// NewRuntime starts the shared runtime with the compiler engine, the
// compilation cache and the host modules the plugins import: voxhost and the
// WASI subset of wasi.go.
func NewRuntime(ctx context.Context, opts Options) (*Runtime, error) {
	limit := opts.MemoryLimitPages
	if limit == 0 {
		limit = DefaultMemoryLimitPages
	}
	if limit > 65536 {
		return nil, fmt.Errorf("memory limit of %d pages exceeds the 4 GiB of a 32-bit memory (65536 pages)", limit)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	var cache wazero.CompilationCache
	if cacheDir != "" && cacheDir != "-" {
		c, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			logger.Warn("compilation cache disabled", "dir", cacheDir, "err", err)
		} else {
			cache = c
		}
	}
	if cache == nil {
		cache = wazero.NewCompilationCache()
	}
	// The runtime's limit only caps growth; Load checks each module's declared
	// minimum against the same limit so the error names the plugin.
	cfg := wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(cache).
		WithMemoryLimitPages(65536).
		WithCloseOnContextDone(false)
	r := &Runtime{rt: wazero.NewRuntimeWithConfig(ctx, cfg), cache: cache, limitPages: limit, logger: logger, moduleConfig: newWASIConfig(),
		memory: mmapAllocator{limitBytes: uint64(limit) * 65536}}
	if err := r.instantiateHostModule(ctx); err != nil {
		_ = r.rt.Close(ctx)
		return nil, err
	}
	if err := r.instantiateWASI(ctx); err != nil {
		_ = r.rt.Close(ctx)
		return nil, err
	}
	return r, nil
}

// LiveInstances counts the instances made and not yet closed; tests use it
// to prove that calls leak none.
func (r *Runtime) LiveInstances() int64 { return r.live.Load() }

// MemoryLimitPages is the per-instance memory cap, in 64 KiB pages.
func (r *Runtime) MemoryLimitPages() uint32 { return r.limitPages }

// Close releases every module and instance of the runtime.
func (r *Runtime) Close(ctx context.Context) error {
	err := r.rt.Close(ctx)
	if cerr := r.cache.Close(ctx); err == nil {
		err = cerr
	}
	return err
}

// Load compiles and validates a plugin. name labels it in every error, log
// line and metric (usually the file name). The returned Plugin is shared by
// all calls; a *ValidationError lists every problem found.
func (r *Runtime) Load(ctx context.Context, name string, wasm []byte) (*Plugin, error) {
	rep, p := r.inspect(ctx, name, wasm)
	if !rep.Valid {
		return nil, &ValidationError{Plugin: name, Problems: rep.Problems}
	}
	return p, nil
}

// Inspect reports what a module exports and imports, its memory and ABI
// version, and every problem that keeps it from being a plugin. It never
// fails: a module that is not WebAssembly is a report with one problem.
func (r *Runtime) Inspect(ctx context.Context, name string, wasm []byte) *Report {
	rep, p := r.inspect(ctx, name, wasm)
	if p != nil {
		_ = p.Close(ctx)
	}
	return rep
}

func (r *Runtime) inspect(ctx context.Context, name string, wasm []byte) (*Report, *Plugin) {
	rep := &Report{Plugin: name, Size: len(wasm), Exports: []Extern{}, Imports: []Extern{}, Problems: []string{}, Warnings: []string{}}
	if problem := checkHeader(wasm); problem != "" {
		rep.Problems = append(rep.Problems, problem)
		return rep, nil
	}
	compiled, err := r.rt.CompileModule(ctx, wasm)
	if err != nil {
		rep.Problems = append(rep.Problems, "invalid WebAssembly: "+err.Error())
		return rep, nil
	}
	p := &Plugin{name: name, rt: r, compiled: compiled}
	rep.describe(compiled)
	rep.Problems = append(rep.Problems, p.validate(r.limitPages, &rep.Warnings)...)
	if len(rep.Problems) == 0 {
		if err := p.probe(ctx, DefaultBufferBytes); err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
	}
	rep.ABIVersion = p.version
	rep.Valid = len(rep.Problems) == 0
	if !rep.Valid {
		_ = compiled.Close(ctx)
		return rep, nil
	}
	return rep, p
}

// checkHeader tells apart files that are not WebAssembly at all and
// WebAssembly components, which wazero cannot run, from core modules.
func checkHeader(wasm []byte) string {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return `not a WebAssembly module (the file does not start with "\0asm")`
	}
	if wasm[4] != 1 || wasm[5] != 0 || wasm[6] != 0 || wasm[7] != 0 {
		if wasm[6] == 1 && wasm[7] == 0 {
			return "a WebAssembly component, not a core module: voxhost runs core modules (build for wasm32, not a component target)"
		}
		return fmt.Sprintf("unsupported WebAssembly binary version % x (core modules are version 1)", wasm[4:8])
	}
	return ""
}

// signature renders a function type as the ABI documents it.
func signature(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return name(params) + " -> " + name(results)
}
