package plugin

import (
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
)

// rewritingEngine shares machine stacks and rebinds set-up handles by
// writing private fields of wazero's compiler call engine, found by name
// and type through reflection: the only code of voxhost that reaches into
// wazero. For a handle whose type is not the one it was written against
// (the interpreter's, or a wazero whose call engine changed) it declines
// every change, as plainEngine does, and callengine_test.go's tests fail,
// so that an upgrade that moves the fields is noticed rather than
// silently costing the memory again.
type rewritingEngine struct{}

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
// call engine this was written against.
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

func (rewritingEngine) shareStack(fn api.Function, s *MachineStack) bool {
	base, l := engineOf(fn)
	if base == nil {
		return false
	}
	*(*[]byte)(unsafe.Add(base, l.stack)) = s.buf
	*(*uintptr)(unsafe.Add(base, l.stackTop)) = uintptr(unsafe.Pointer(&s.buf[len(s.buf)-1])) &^ 15
	*(**byte)(unsafe.Add(base, l.bottom)) = &s.buf[0]
	return true
}

func (rewritingEngine) home(fn api.Function) unsafe.Pointer {
	base, l := engineOf(fn)
	if base == nil {
		return nil
	}
	return *(*unsafe.Pointer)(unsafe.Add(base, l.parent))
}

func (rewritingEngine) bind(fn api.Function, home unsafe.Pointer) {
	base, l := engineOf(fn)
	*(*unsafe.Pointer)(unsafe.Add(base, l.parent)) = home
}

// stackBytes is the length of fn's machine stack, or 0 when its engine's
// layout is unknown; tests read it, whichever engine their runtime uses.
func stackBytes(fn api.Function) int {
	base, l := engineOf(fn)
	if base == nil {
		return 0
	}
	return len(*(*[]byte)(unsafe.Add(base, l.stack)))
}
