package plugin

import (
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
)

// keptStackBytes is the machine stack a kept function handle starts with.
// wazero's compiler gives every handle a fixed 10,240-byte stack that grows
// on demand; a call keeps one handle per plugin (vox_process) for its whole
// life, and the stock plugins' vox_process needs at most 1.5 KiB of that
// stack (vad's SIMD filter bank; TestCallStackStaysSmall), so the rest was
// the largest item of a call's live heap (RATIONALE.md, "The call engine's
// stack"). A plugin that needs more grows it once, on its first deep
// frame, as wazero grows any stack.
const keptStackBytes = 2048

// stackLayout is where, inside wazero's compiler call engine (the dynamic
// type behind its api.Function), the three words describing the machine
// stack live: the stack itself, its 16-byte aligned top, and the execution
// context's pointer to its bottom, which compiled code compares the stack
// pointer against before it calls deeper.
type stackLayout struct {
	typ                     reflect.Type
	stack, stackTop, bottom uintptr
	ok                      bool
}

// lastLayout caches the layout of the one engine type a runtime uses.
var lastLayout atomic.Pointer[stackLayout]

// layoutOf finds the stack fields in t, or reports ok false when t is not
// the call engine this was written against (the interpreter, or a wazero
// whose call engine changed): then no handle is touched, and
// TestCallStackShrinks fails, so an upgrade that moves these fields is
// noticed rather than silently costing the memory again.
func layoutOf(t reflect.Type) *stackLayout {
	if l := lastLayout.Load(); l != nil && l.typ == t {
		return l
	}
	l := &stackLayout{typ: t}
	lastLayout.Store(l)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return l
	}
	s := t.Elem()
	stack, ok1 := s.FieldByName("stack")
	top, ok2 := s.FieldByName("stackTop")
	ctx, ok3 := s.FieldByName("execCtx")
	if !ok1 || !ok2 || !ok3 || stack.Type != reflect.TypeOf([]byte(nil)) ||
		top.Type.Kind() != reflect.Uintptr || ctx.Type.Kind() != reflect.Struct {
		return l
	}
	bottom, ok := ctx.Type.FieldByName("stackBottomPtr")
	if !ok || bottom.Type != reflect.TypeOf((*byte)(nil)) {
		return l
	}
	l.stack, l.stackTop, l.bottom, l.ok = stack.Offset, top.Offset, ctx.Offset+bottom.Offset, true
	return l
}

// shrinkStack replaces fn's machine stack by one of keptStackBytes, the
// way wazero's own stack growth replaces it (a new slice, its aligned top,
// its bottom), and reports whether it could. fn must not be running.
func shrinkStack(fn api.Function) bool {
	v := reflect.ValueOf(fn)
	l := layoutOf(v.Type())
	if !l.ok || v.IsNil() {
		return false
	}
	base := v.UnsafePointer()
	stack := (*[]byte)(unsafe.Add(base, l.stack))
	if len(*stack) <= keptStackBytes {
		return true
	}
	s := make([]byte, keptStackBytes)
	top := uintptr(unsafe.Pointer(&s[len(s)-1]))
	*stack = s
	*(*uintptr)(unsafe.Add(base, l.stackTop)) = top &^ 15
	*(**byte)(unsafe.Add(base, l.bottom)) = &s[0]
	return true
}

// stackBytes is the length of fn's machine stack, or 0 when its engine's
// layout is unknown.
func stackBytes(fn api.Function) int {
	v := reflect.ValueOf(fn)
	l := layoutOf(v.Type())
	if !l.ok || v.IsNil() {
		return 0
	}
	return len(*(*[]byte)(unsafe.Add(v.UnsafePointer(), l.stack)))
}
