package plugin

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/internal/preempt"
)

// Every api.Function handle of wazero's compiler is a call engine with a
// machine stack of its own, 10,240 bytes to start with, growing on demand.
// A call keeps one per plugin (vox_process) for its whole life, and used to
// make and drop one for every set-up call (the start function, _initialize,
// vox_buffer, vox_init, vox_rate, each event): 46 KiB of a 4-plugin call's
// live heap and ~280 KiB of garbage per call set-up, the garbage being what
// kept the heap at the collector's goal. Two changes to the handles, made
// in place because wazero has no option for either (RATIONALE.md, "The
// call engine"): the kept handles of a pipeline share one MachineStack of
// keptStackBytes, and set-up handles are pooled per plugin and bound to
// the instance that borrows one.
//
// Both go through callEngine, the one seam between this package and the
// inside of wazero's handles. rewritingEngine (callengine_rewrite.go, the
// only code that touches wazero's private fields) makes them when the
// handle's type has the layout it was written against; plainEngine, which
// Options.PlainCallEngine selects and which is what rewritingEngine does
// for a handle of any other layout, leaves every handle as wazero made it.

// keptStackBytes is the size of a MachineStack: the stock
// plugins' vox_process needs at most 1.5 KiB (vad's SIMD filter bank;
// TestCallStackStaysSmall). A plugin that needs more grows it once, on its
// first deep frame, as wazero grows any stack.
const keptStackBytes = 2048

// callEngine is everything the host does to a wazero function handle
// besides calling it. Each method may decline, and a handle it declined is
// used as wazero made it: that costs memory, never correctness.
type callEngine interface {
	// shareStack makes s fn's machine stack, the way wazero's own stack
	// growth replaces it, and says whether it did. fn must not be
	// running.
	shareStack(fn api.Function, s *MachineStack) bool
	// home is the module instance fn runs in, or nil when the engine
	// cannot rebind handles: then set-up handles are made for each use
	// rather than pooled.
	home(fn api.Function) unsafe.Pointer
	// bind binds fn, whose home was not nil, to the module instance home
	// (nil: to none, so that a pooled handle does not keep a closed
	// instance alive).
	bind(fn api.Function, home unsafe.Pointer)
}

// plainEngine leaves every handle as wazero made it.
type plainEngine struct{}

func (plainEngine) shareStack(api.Function, *MachineStack) bool { return false }
func (plainEngine) home(api.Function) unsafe.Pointer            { return nil }
func (plainEngine) bind(api.Function, unsafe.Pointer)           {}

// MachineStack is a machine stack that kept vox_process handles run on
// (InstanceConfig.Stack). Handles that share one must never run at the
// same time; what one leaves on it is never read by another, since
// compiled code writes every stack slot it reads. A handle that needs
// more grows a stack of its own and leaves the shared one to the others.
type MachineStack struct{ buf []byte }

// NewMachineStack makes a stack of keptStackBytes.
func NewMachineStack() *MachineStack { return &MachineStack{buf: make([]byte, keptStackBytes)} }

// shareStack gives the instance's vox_process handle stack, or one of its
// own when stack is nil. A runtime whose engine rewrites handles but finds
// one it cannot (a wazero whose call engine changed) says so once, since
// every call then costs the memory again.
func (in *Instance) shareStack(stack *MachineStack) {
	rt := in.plugin.rt
	if _, plain := rt.engine.(plainEngine); plain {
		return
	}
	if stack == nil {
		stack = NewMachineStack()
	}
	if !rt.engine.shareStack(in.process, stack) {
		rt.layoutWarning.Do(func() {
			rt.logger.Warn("wazero's call engine does not have the layout voxhost rewrites (a wazero upgrade?): plugin handles keep the stacks wazero makes, about 10 KiB more per plugin of each call, and set-up handles are not pooled; see RATIONALE.md, \"The call engine\"")
		})
	}
}

// setupExports are the exports an instance calls a few times in its life,
// whose handles a plugin pools.
var setupExports = []string{preempt.ExportStart, "_initialize", abi.ExportBuffer, abi.ExportInit, abi.ExportRate, abi.ExportEvent, abi.ExportReference}

// handlePool keeps, per set-up export of one plugin, handles no call is
// using, unbound. The zero value pools nothing.
type handlePool map[string]*sync.Pool

func newHandlePool() handlePool {
	p := make(handlePool, len(setupExports))
	for _, name := range setupExports {
		p[name] = new(sync.Pool)
	}
	return p
}

// CollectIdle runs the collector twice, so that a heap measurement taken
// after it counts what is live: the first collection moves the idle set-up
// handles the plugins pool (and what any sync.Pool holds) to the pools'
// victim caches, the second frees them. One collection leaves up to ~70
// KiB per plugin that set up instances before the measurement, which can
// make a per-call figure negative.
func CollectIdle() {
	runtime.GC()
	runtime.GC()
}

// callExport calls the set-up export name: through a pooled handle bound to
// in's module instance when one is free, else through a new one, which
// joins the pool after it returned normally. A handle that trapped or was
// stopped is dropped, so a pooled handle has always returned cleanly.
func (in *Instance) callExport(name string) error {
	engine := in.plugin.rt.engine
	home := engine.home(in.process)
	pool := in.plugin.handles[name]
	var fn api.Function
	if pool != nil && home != nil {
		if pooled, _ := pool.Get().(api.Function); pooled != nil {
			engine.bind(pooled, home)
			fn = pooled
		}
	}
	if fn == nil {
		fn = in.mod.ExportedFunction(name)
	}
	err := in.call(fn)
	// Only a handle of this module's own code is bound to this instance
	// (an export of an imported function would run in another), so only
	// such a handle can be bound to the next one.
	if err == nil && pool != nil && home != nil && engine.home(fn) == home {
		engine.bind(fn, nil)
		pool.Put(fn)
	}
	return err
}
