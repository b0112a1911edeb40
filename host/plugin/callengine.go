package plugin

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/preempt"
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

// keptStackBytes is the size of a MachineStack: the stock
// plugins' vox_process needs at most 1.5 KiB (vad's SIMD filter bank;
// TestCallStackStaysSmall). A plugin that needs more grows it once, on its
// first deep frame, as wazero grows any stack.
const keptStackBytes = 2048

// engineLayout is where, inside wazero's compiler call engine (the dynamic
// type behind its api.Function), the words this file rewrites live: the
// machine stack, its 16-byte aligned top, the execution context's pointer
// to its bottom (compiled code compares the stack pointer against it before
// it calls deeper) and the module instance the handle runs in (its
// moduleEngine: memory, globals, tables; the compiled code and everything
// else a handle holds belong to the compiled module, shared by instances).
type engineLayout struct {
	typ                             reflect.Type
	stack, stackTop, bottom, parent uintptr
	ok                              bool
}

// lastLayout caches the layout of the one engine type a runtime uses.
var lastLayout atomic.Pointer[engineLayout]

// layoutOf finds the fields in t, or reports ok false when t is not the
// call engine this was written against (the interpreter, or a wazero whose
// call engine changed): then no handle is touched, and the tests of
// callengine_test.go fail, so an upgrade that moves these fields is noticed
// rather than silently costing the memory again.
func layoutOf(t reflect.Type) *engineLayout {
	if l := lastLayout.Load(); l != nil && l.typ == t {
		return l
	}
	l := &engineLayout{typ: t}
	lastLayout.Store(l)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return l
	}
	s := t.Elem()
	stack, ok1 := s.FieldByName("stack")
	top, ok2 := s.FieldByName("stackTop")
	ctx, ok3 := s.FieldByName("execCtx")
	parent, ok4 := s.FieldByName("parent")
	if !ok1 || !ok2 || !ok3 || !ok4 || stack.Type != reflect.TypeOf([]byte(nil)) ||
		top.Type.Kind() != reflect.Uintptr || ctx.Type.Kind() != reflect.Struct ||
		parent.Type.Kind() != reflect.Pointer || parent.Type.Elem().Name() != "moduleEngine" {
		return l
	}
	bottom, ok := ctx.Type.FieldByName("stackBottomPtr")
	if !ok || bottom.Type != reflect.TypeOf((*byte)(nil)) {
		return l
	}
	l.stack, l.stackTop, l.bottom, l.parent = stack.Offset, top.Offset, ctx.Offset+bottom.Offset, parent.Offset
	l.ok = true
	return l
}

// engineOf is fn's call engine and its layout, or nil when the layout is
// unknown.
func engineOf(fn api.Function) (unsafe.Pointer, *engineLayout) {
	if fn == nil {
		return nil, nil
	}
	v := reflect.ValueOf(fn)
	l := layoutOf(v.Type())
	if !l.ok || v.IsNil() {
		return nil, nil
	}
	return v.UnsafePointer(), l
}

// MachineStack is a machine stack that kept vox_process handles run on
// (InstanceConfig.Stack). Handles that share one must never run at the
// same time; what one leaves on it is never read by another, since
// compiled code writes every stack slot it reads. A handle that needs
// more grows a stack of its own and leaves the shared one to the others.
type MachineStack struct{ buf []byte }

// NewMachineStack makes a stack of keptStackBytes.
func NewMachineStack() *MachineStack { return &MachineStack{buf: make([]byte, keptStackBytes)} }

// give makes s fn's machine stack instead of the one wazero made, the way
// wazero's own stack growth replaces it (the slice, its aligned top, its
// bottom). fn must not be running.
func (s *MachineStack) give(fn api.Function) {
	base, l := engineOf(fn)
	if base == nil {
		return
	}
	*(*[]byte)(unsafe.Add(base, l.stack)) = s.buf
	*(*uintptr)(unsafe.Add(base, l.stackTop)) = uintptr(unsafe.Pointer(&s.buf[len(s.buf)-1])) &^ 15
	*(**byte)(unsafe.Add(base, l.bottom)) = &s.buf[0]
}

// stackBytes is the length of fn's machine stack, or 0 when its engine's
// layout is unknown.
func stackBytes(fn api.Function) int {
	base, l := engineOf(fn)
	if base == nil {
		return 0
	}
	return len(*(*[]byte)(unsafe.Add(base, l.stack)))
}

// parentOf is the module instance fn runs in, or nil.
func parentOf(fn api.Function) unsafe.Pointer {
	base, l := engineOf(fn)
	if base == nil {
		return nil
	}
	return *(*unsafe.Pointer)(unsafe.Add(base, l.parent))
}

// setParent binds fn to the module instance parent (nil: to none, so a
// pooled handle does not keep a closed instance alive).
func setParent(fn api.Function, parent unsafe.Pointer) {
	base, l := engineOf(fn)
	*(*unsafe.Pointer)(unsafe.Add(base, l.parent)) = parent
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
	home := parentOf(in.process)
	pool := in.plugin.handles[name]
	var fn api.Function
	if pool != nil && home != nil {
		if pooled, _ := pool.Get().(api.Function); pooled != nil {
			setParent(pooled, home)
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
	if err == nil && pool != nil && home != nil && parentOf(fn) == home {
		setParent(fn, nil)
		pool.Put(fn)
	}
	return err
}
