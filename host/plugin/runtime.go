package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/internal/preempt"
)

// DefaultMemoryLimitPages caps each instance's memory at 16 MiB.
const DefaultMemoryLimitPages = 256

// DefaultBudget is how long one call into a plugin may run (vox_process,
// vox_event, vox_buffer, vox_rate) before the host stops it: a quarter of a
// 20 ms frame, over a thousand times what the heaviest stock plugin needs.
const DefaultBudget = 5 * time.Millisecond

// DefaultInitBudget is how long each set-up call may run: the start
// function, _initialize, vox_init. A Go guest's runtime start-up takes a
// few milliseconds; every call pays its plugins' set-up, on the cores the
// calls already running need, so the default leaves ten times that and no
// more (a 250 ms default let a plugin that used it on every call push a
// healthy call's round trip to 160 ms).
const DefaultInitBudget = 50 * time.Millisecond

// DefaultCompileTimeout is how long loading one module (validation,
// instrumentation, compilation) may take once it has a compile slot: a
// backstop, since Limits already bound what a module can make the
// compiler do. The largest plugin of this repository, a 2 MB Go guest,
// compiles in about 0.6 s here, but in 12 s under the race detector and
// in over 30 s when tests load it on a busy machine.
const DefaultCompileTimeout = 2 * time.Minute

// Limits caps what a module may make the host spend before it runs: each
// count is read from the module's sections before wazero sees them, and a
// module over any of them is refused with an error that names the limit
// (plugin_limits.NAME) and the value. A zero field means the default of
// DefaultLimits. The rewriter that enforces them is internal/preempt,
// whose type this is.
type Limits = preempt.Limits

// DefaultLimits are about ten times what the largest plugin of this
// repository needs (a Go guest), and small enough that compiling and
// instantiating a module at every limit at once stays within a few hundred
// megabytes and seconds.
var DefaultLimits = preempt.DefaultLimits

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
	// DefaultBudget caps each call into an instance whose InstanceConfig
	// sets no Budget; zero means DefaultBudget.
	DefaultBudget time.Duration
	// InitBudget caps each set-up call of an instance (start function,
	// _initialize, vox_init, vox_rate); zero means DefaultInitBudget. An
	// instance whose Budget is larger gets that instead.
	InitBudget time.Duration
	// Limits caps what a module may declare; zero fields mean
	// DefaultLimits'.
	Limits Limits
	// CompileTimeout caps the loading of one module; zero means
	// DefaultCompileTimeout.
	CompileTimeout time.Duration

	// PlainCallEngine leaves wazero's function handles as wazero makes
	// them: each instance's vox_process keeps a 10 KiB machine stack of
	// its own instead of sharing the pipeline's 2 KiB one, and every
	// set-up call makes a handle instead of borrowing a pooled one (about
	// 40 KiB of live heap and 280 KiB of garbage more per 4-plugin call).
	// Without it the host rewrites private fields of wazero's compiler
	// call engine (RATIONALE.md, "The call engine"), and does so only
	// where their layout is the one it was written against.
	PlainCallEngine bool

	// unmetered compiles plugins without fuel checks; only the overhead
	// benchmark sets it (export_test.go). interpreter runs plugins in
	// wazero's interpreter, whose handles the rewriting engine does not
	// know; only the test of that fallback sets it.
	unmetered, interpreter bool
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
	// budget and initBudget are the defaults of Options; unmetered turns
	// the fuel checks off, for the overhead benchmark (budget.go).
	budget, initBudget time.Duration
	unmetered          bool
	// limits, compileTimeout and compileSlots bound loading: what a module
	// may declare, how long it may take, and how many modules compile at
	// once (the rest wait), so that uploads cannot take every core from
	// the calls. validator checks modules before they are rewritten.
	limits         preempt.Limits
	compileTimeout time.Duration
	compileSlots   chan struct{}
	validator      wazero.Runtime
	// engine is what the host does to function handles (callengine.go);
	// layoutWarning says once that it found a layout it does not know.
	engine        callEngine
	layoutWarning sync.Once
	// compiling counts the compiles under way, abandoned ones included,
	// which Close waits for: wazero must not close an engine that is
	// compiling.
	compiling sync.WaitGroup
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
	budget, initBudget := opts.DefaultBudget, opts.InitBudget
	if budget == 0 {
		budget = DefaultBudget
	}
	if initBudget == 0 {
		initBudget = DefaultInitBudget
	}
	if budget < 0 || initBudget < 0 {
		return nil, fmt.Errorf("budgets must be positive, got %v and %v", budget, initBudget)
	}
	compileTimeout := opts.CompileTimeout
	if compileTimeout == 0 {
		compileTimeout = DefaultCompileTimeout
	}
	if compileTimeout < 0 {
		return nil, fmt.Errorf("compile timeout must be positive, got %v", compileTimeout)
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
	var engine callEngine = rewritingEngine{}
	if opts.PlainCallEngine {
		engine = plainEngine{}
	}
	cfg := wazero.NewRuntimeConfigCompiler()
	if opts.interpreter {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	cfg = cfg.WithCompilationCache(cache).
		WithMemoryLimitPages(65536).
		WithCloseOnContextDone(false)
	r := &Runtime{rt: wazero.NewRuntimeWithConfig(ctx, cfg), cache: cache, limitPages: limit, logger: logger, moduleConfig: newWASIConfig(),
		memory: mmapAllocator{limitBytes: uint64(limit) * 65536},
		budget: budget, initBudget: initBudget, unmetered: opts.unmetered, engine: engine,
		limits: opts.Limits, compileTimeout: compileTimeout,
		compileSlots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
		// The interpreter validates as the compiler does, at a sixth of
		// the time, and keeps no machine code.
		validator: wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())}
	if err := r.instantiateHostModule(ctx); err != nil {
		_ = r.rt.Close(ctx)
		return nil, err
	}
	if err := r.instantiateWASI(ctx); err != nil {
		_ = r.rt.Close(ctx)
		return nil, err
	}
	if err := r.instantiateBudgetModule(ctx); err != nil {
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

// DefaultBudget is the budget of a call into an instance whose
// InstanceConfig sets none.
func (r *Runtime) DefaultBudget() time.Duration { return r.budget }

// Close releases every module and instance of the runtime.
func (r *Runtime) Close(ctx context.Context) error {
	r.compiling.Wait()
	err := r.rt.Close(ctx)
	_ = r.validator.Close(ctx)
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
	compiled, instrErr, err := r.compile(ctx, wasm)
	if err != nil {
		var limit *preempt.LimitError
		switch {
		case errors.As(err, &limit):
			rep.Problems = append(rep.Problems, "over a host limit: "+err.Error())
		case errors.Is(err, errLoadTimeout), ctx.Err() != nil:
			rep.Problems = append(rep.Problems, err.Error())
		default:
			rep.Problems = append(rep.Problems, "invalid WebAssembly: "+err.Error())
		}
		return rep, nil
	}
	p := &Plugin{name: name, rt: r, compiled: compiled, handles: newHandlePool()}
	rep.describe(compiled)
	rep.Problems = append(rep.Problems, p.validate(r.limitPages, &rep.Warnings)...)
	if len(rep.Problems) == 0 && instrErr != nil {
		rep.Problems = append(rep.Problems, "the host cannot enforce a CPU budget on this module: "+instrErr.Error())
	}
	if len(rep.Problems) == 0 {
		if err := p.probe(ctx, &rep.Warnings); err != nil {
			// The report names the plugin once, not in every problem.
			rep.Problems = append(rep.Problems, strings.TrimPrefix(err.Error(), "plugin "+name+": "))
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

// errLoadTimeout is wrapped by the error of a load that took longer than
// the compile timeout.
var errLoadTimeout = errors.New("loading took too long")

// compile runs compileNow in a compile slot, within the compile timeout and
// ctx: a load that takes longer is abandoned (its goroutine finishes on its
// own, bounded by the limits, and releases what it made), and the caller
// gets an error at once. Waiting for a slot counts only against ctx: every
// slot is held for at most the timeout, so the wait is bounded too.
func (r *Runtime) compile(ctx context.Context, wasm []byte) (wazero.CompiledModule, error, error) {
	type result struct {
		compiled      wazero.CompiledModule
		instrErr, err error
	}
	select {
	case r.compileSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("loading cancelled: %w", ctx.Err())
	}
	if ctx.Err() != nil {
		<-r.compileSlots
		return nil, nil, fmt.Errorf("loading cancelled: %w", ctx.Err())
	}
	deadline := time.NewTimer(r.compileTimeout)
	defer deadline.Stop()
	done := make(chan result, 1)
	r.compiling.Add(1)
	go func() {
		defer r.compiling.Done()
		defer func() { <-r.compileSlots }()
		var res result
		res.compiled, res.instrErr, res.err = r.compileNow(context.Background(), wasm)
		done <- res
	}()
	abandon := func() {
		go func() {
			if res := <-done; res.compiled != nil {
				_ = res.compiled.Close(context.Background())
			}
		}()
	}
	select {
	case res := <-done:
		return res.compiled, res.instrErr, res.err
	case <-deadline.C:
		abandon()
		return nil, nil, fmt.Errorf("%w: not compiled within %v (plugin_limits.compile_timeout)", errLoadTimeout, r.compileTimeout)
	case <-ctx.Done():
		abandon()
		return nil, nil, fmt.Errorf("loading cancelled: %w", ctx.Err())
	}
}

// compileNow compiles a module the way the runtime runs it: instrumented
// (internal/preempt) so that a call that runs too long can be stopped.
//
// The instrumentation reads the whole module first, against the limits,
// and wazero only ever sees bytes it accepted: wazero trusts the counts a
// module declares, and a malformed module of a few bytes can make it
// allocate gigabytes. Then the original is validated: the rewrite could
// make some invalid modules valid (a start function with parameters
// becomes a mere export). Errors are about the author's module: when the
// instrumented module does not compile, or uses a name the instrumentation
// reserves, the original is compiled too, so that the ABI problems are
// what Load reports, and instrErr, why it could not be instrumented, only
// when there is nothing else to say. compiled is then the original, for
// the report.
func (r *Runtime) compileNow(ctx context.Context, wasm []byte) (compiled wazero.CompiledModule, instrErr, err error) {
	out, instrErr := preempt.InstrumentConfig(wasm, preempt.Config{Limits: r.limits}) // even when unmetered, to screen the module
	if instrErr != nil && !errors.Is(instrErr, preempt.ErrReserved) {
		return nil, nil, instrErr
	}
	original, err := compileModule(ctx, r.validator, wasm)
	if err != nil {
		return nil, nil, err
	}
	_ = original.Close(ctx)
	switch {
	case r.unmetered:
		compiled, err = compileModule(ctx, r.rt, wasm)
		return compiled, nil, err
	case instrErr == nil:
		if compiled, err = compileModule(ctx, r.rt, out); err == nil {
			return compiled, nil, nil
		}
		instrErr = fmt.Errorf("the instrumented module does not compile: %w", err)
	}
	compiled, err = compileModule(ctx, r.rt, wasm)
	return compiled, instrErr, err
}

// compileModule is wazero's CompileModule, which panics on some malformed
// modules (v1.12: a call to a function whose declared type does not
// exist): a file must not take the host down.
func compileModule(ctx context.Context, rt wazero.Runtime, wasm []byte) (compiled wazero.CompiledModule, err error) {
	defer func() {
		if p := recover(); p != nil {
			compiled, err = nil, fmt.Errorf("malformed module (wazero failed reading it: %v)", p)
		}
	}()
	return rt.CompileModule(ctx, wasm)
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
