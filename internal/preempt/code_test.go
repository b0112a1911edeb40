package preempt

import (
	"bytes"
	"testing"
)

func sec(id byte, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	return append(appendU32([]byte{id}, uint32(len(b))), b...)
}

func name(s string) []byte { return appendName(nil, s) }

func body(code ...[]byte) []byte {
	b := bytes.Join(code, nil)
	return appendU32(nil, uint32(len(b))) // size, then b
}

// tiny is a module of two functions of type (i32) -> (i32): $0 loops
// forever, $1 calls $0; $1 is exported as "f".
func tiny() []byte {
	f0 := []byte{0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x20, 0x00, 0x0b}
	f1 := []byte{0x00, 0x20, 0x00, 0x10, 0x00, 0x0b}
	return bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, []byte{1, 0x60, 1, 0x7f, 1, 0x7f}),
		sec(secFunction, []byte{2, 0, 0}),
		sec(secExport, []byte{1}, name("f"), []byte{0, 1}),
		sec(secCode, []byte{2}, body(f0), f0, body(f1), f1),
	}, nil)
}

func TestFuelChecks(t *testing.T) {
	out, err := InstrumentMode(tiny(), Fuel)
	if err != nil {
		t.Fatal(err)
	}
	check := func(weight byte) []byte { // the fuel check on local 1; the tick is function 0
		return []byte{0x20, 1, 0x41, 0x80 | weight, 0x80, 0x80, 0x80, 0x00, 0x6b, 0x22, 1,
			0x41, 0, 0x48, 0x04, 0x40, 0x10, 0, 0x21, 1, 0x0b}
	}
	prologue := []byte{0x01, 0x01, 0x7f, 0x23, 0, 0x21, 1} // locals (1 i32: the fuel); local 1 = global 0
	save := []byte{0x20, 1, 0x24, 0}
	load := []byte{0x23, 0, 0x21, 1}
	take := func(weight byte) []byte { // the fuel check on local 1, without its branch
		return []byte{0x20, 1, 0x41, 0x80 | weight, 0x80, 0x80, 0x80, 0x00, 0x6b, 0x22, 1, 0x41, 0, 0x48}
	}
	leave := []byte{0x04, 0x40, 0x0c, 0x02, 0x0b} // if; br 2 (the label just outside the loop); end
	f0 := bytes.Join([][]byte{prologue,
		{0x02, 0x40, 0x02, 0x40, 0x02, 0x40}, // block $done, block, block $slow
		{0x03, 0x40}, take(2), leave,         // the first copy and its check: if; br $slow; end
		{0x0c, 0x00, 0x0b},           // br to the loop itself: no new label in between
		{0x0c, 0x02, 0x0b, 0x0b},     // br $done; end $slow; end
		{0x03, 0x40, 0x02, 0x40},     // loop $again, block $refill
		{0x03, 0x40}, take(2), leave, // the second copy and its check: if; br $refill; end
		{0x0c, 0x00, 0x0b},             // the same loop
		{0x0c, 0x02, 0x0b},             // br $done; end $refill
		{0x10, 0x00, 0x21, 0x01},       // call $tick; local.set $f
		{0x0c, 0x00, 0x0b, 0x00, 0x0b}, // br $again; end; unreachable; end $done
		{0x20, 0x00}, save, {0x0b}}, nil)
	f1 := bytes.Join([][]byte{prologue, check(3), // entry: local.get, call, end
		{0x20, 0x00}, save, {0x10, 0x01}, load, save, {0x0b}}, nil)
	want := bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, []byte{2, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 0, 1, 0x7f}),
		sec(secImport, []byte{1}, name(ImportModule), name(ImportTick), []byte{0, 1}),
		sec(secFunction, []byte{2, 0, 0}),
		sec(secGlobal, []byte{1, 0x7f, 1, 0x41, 0x80, 0x80, 0x10, 0x0b}), // Refill, 1<<18
		sec(secExport, []byte{1}, name("f"), []byte{0, 2}),
		sec(secCode, []byte{2}, body(f0), f0, body(f1), f1),
	}, nil)
	if !bytes.Equal(out, want) {
		t.Fatalf("got  % x\nwant % x", out, want)
	}
}

func TestFlagChecks(t *testing.T) {
	out, err := InstrumentMode(tiny(), Flag)
	if err != nil {
		t.Fatal(err)
	}
	check := []byte{0x23, 0, 0x04, 0x40, 0x00, 0x0b}
	f0 := bytes.Join([][]byte{{0x00, 0x03, 0x40}, check, {0x0c, 0x00, 0x0b, 0x20, 0x00, 0x0b}}, nil)
	f1 := bytes.Join([][]byte{{0x00}, check, {0x20, 0x00, 0x10, 0x00, 0x0b}}, nil)
	want := bytes.Join([][]byte{
		[]byte("\x00asm\x01\x00\x00\x00"),
		sec(secType, []byte{1, 0x60, 1, 0x7f, 1, 0x7f}),
		sec(secFunction, []byte{2, 0, 0}),
		sec(secGlobal, []byte{1, 0x7f, 1, 0x41, 0, 0x0b}),
		sec(secExport, []byte{2}, name("f"), []byte{0, 1}, name(ExportStop), []byte{3, 0}),
		sec(secCode, []byte{2}, body(f0), f0, body(f1), f1),
	}, nil)
	if !bytes.Equal(out, want) {
		t.Fatalf("got  % x\nwant % x", out, want)
	}
}

func TestStartAndNamesFollowTheShift(t *testing.T) {
	// tiny with a start function ($0) and a name section naming both
	// functions and a local of $1.
	names := bytes.Join([][]byte{name("name"),
		{1}, appendU32(nil, uint32(len(bytes.Join([][]byte{{2, 0}, name("spin"), {1}, name("caller")}, nil)))),
		{2, 0}, name("spin"), {1}, name("caller"),
		{2}, appendU32(nil, uint32(len(bytes.Join([][]byte{{1, 1, 1, 0}, name("x")}, nil)))),
		{1, 1, 1, 0}, name("x"),
	}, nil)
	m := append(tiny(), sec(secCustom, names)...)
	m = append(m, sec(secCustom, name(".debug_info"), []byte{1, 2, 3})...)
	// The start section goes after the export section.
	mod := &module{mode: Fuel}
	mod.split(m)
	var withStart []byte
	withStart = append(withStart, m[:8]...)
	for _, s := range mod.sections {
		withStart = append(withStart, sec(s.id, s.body)...)
		if s.id == secExport {
			withStart = append(withStart, sec(secStart, []byte{0})...)
		}
	}
	out, err := Instrument(withStart)
	if err != nil {
		t.Fatal(err)
	}
	got := &module{}
	got.split(out)
	if got.byID[secStart] != nil {
		t.Fatal("the start section is still there")
	}
	exports := got.byID[secExport].body
	if want := bytes.Join([][]byte{{2}, name("f"), {0, 2}, name(ExportStart), {0, 1}}, nil); !bytes.Equal(exports, want) {
		t.Fatalf("exports = % x, want % x", exports, want)
	}
	var customs []string
	for _, s := range got.sections {
		if s.id == secCustom {
			r := s.reader()
			n := string(r.name())
			customs = append(customs, n)
			if n == "name" {
				want := bytes.Join([][]byte{
					{1}, appendU32(nil, uint32(len(bytes.Join([][]byte{{2, 1}, name("spin"), {2}, name("caller")}, nil)))),
					{2, 1}, name("spin"), {2}, name("caller"),
					{2}, appendU32(nil, uint32(len(bytes.Join([][]byte{{1, 2, 1, 0}, name("x")}, nil)))),
					{1, 2, 1, 0}, name("x"),
				}, nil)
				if !bytes.Equal(r.b[r.pos:], want) {
					t.Fatalf("name section = % x\nwant           % x", r.b[r.pos:], want)
				}
			}
		}
	}
	if len(customs) != 1 || customs[0] != "name" {
		t.Fatalf("custom sections = %q, want only name (DWARF is stale after the rewrite)", customs)
	}
}
