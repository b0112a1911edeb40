package preempt

import "fmt"

// Limits caps what a module may make the host spend before it runs: each
// count below is read from the module's sections before wazero sees them,
// and a module over any of them is refused with an error that names the
// limit and the value. wazero allocates from the counts a module declares
// (a function's locals, a table's elements, a global's instance), so a few
// kilobytes of module can otherwise ask for gigabytes at compile or
// instantiation time. A zero field means the default of DefaultLimits.
type Limits struct {
	// ModuleBytes caps the size of the binary module.
	ModuleBytes int `json:"module_bytes"`
	// Functions caps the functions, imported and defined.
	Functions uint32 `json:"functions"`
	// FunctionLocals caps one function's parameters and locals;
	// ModuleLocals caps them summed over every function.
	FunctionLocals uint64 `json:"function_locals"`
	ModuleLocals   uint64 `json:"module_locals"`
	// FunctionBytes caps one function body; CodeBytes the code section.
	FunctionBytes int `json:"function_bytes"`
	CodeBytes     int `json:"code_bytes"`
	// Nesting caps the depth of blocks, loops and ifs in a function.
	Nesting int `json:"nesting"`
	// Tables caps the tables; TableElements the elements of all tables
	// together, at their largest: a table whose declared maximum (or lack
	// of one) would let it grow past the cap gets a maximum within it, so
	// that table.grow past the cap fails in the guest with -1, as
	// memory.grow does past the memory limit.
	Tables        uint32 `json:"tables"`
	TableElements uint64 `json:"table_elements"`
	// Globals caps the globals, imported and defined.
	Globals uint32 `json:"globals"`
	// DataSegments and DataBytes cap the data segments and their bytes;
	// ElementEntries caps the entries of all element segments.
	DataSegments   uint32 `json:"data_segments"`
	DataBytes      uint64 `json:"data_bytes"`
	ElementEntries uint64 `json:"element_entries"`
	// BranchTableEntries caps the labels of the br_table instructions of
	// one function, summed: wazevo compiles every label as a block of its
	// own and adds it to its target's predecessors one by one, checking
	// each against those before it, so a function's labels cost it time
	// quadratic in their number and about 2.5 KB each (one table of
	// 300,000 labels: 65 s and 800 MB).
	//
	// All functions together may have BranchTableEntries labels or one per
	// labelBytes bytes of the module, whichever is more (moduleLabels):
	// the compile's cost per label is what is left once each function is
	// capped, and sixteen functions at the cap in 64 KiB took 0.27–0.37 s
	// of CPU. Go's guest, the densest in labels, has one per 43 bytes
	// (46,193 in 1.98 MB).
	BranchTableEntries uint64 `json:"branch_table_entries"`
	// RewriteFactor caps the rewritten module at this many times the
	// input's size, plus rewriteSlack for what even a tiny module gains
	// (the tick, the fuel, the start export): what wazero compiles, and
	// the time and memory that takes, stays proportional to what was
	// uploaded.
	RewriteFactor int `json:"rewrite_factor"`
}

// rewriteSlack is what a rewritten module may grow by beyond
// Limits.RewriteFactor times its size: the declarations and checks a
// module of a few hundred bytes gains are a large multiple of it.
const rewriteSlack = 4096

// DefaultLimits are about ten times what the largest plugin of this
// repository needs (a Go guest: 2 MB of module, 1,332 functions, a 5,428
// element table, 22,714 data segments), and small enough that compiling and
// instantiating a module at every limit at once stays within a few hundred
// megabytes and seconds (RATIONALE.md has the measurements).
var DefaultLimits = Limits{
	ModuleBytes:    16 << 20,
	Functions:      20000,
	FunctionLocals: 50000,
	ModuleLocals:   500000,
	FunctionBytes:  1 << 20,
	CodeBytes:      12 << 20,
	Nesting:        4096,
	Tables:         8,
	TableElements:  1 << 16,
	Globals:        1024,
	DataSegments:   200000,
	DataBytes:      8 << 20,
	ElementEntries: 1 << 17,
	// The Go guest's largest function has 535 labels; a 64 KiB module of
	// 16 functions at this cap compiles in 0.37 s of CPU and 35 MB, its
	// time linear from here on (RATIONALE.md).
	BranchTableEntries: 4096,
	// The stock plugins and examples grow by 1.2× (the Go guest) to 1.9×;
	// test modules of a few hundred bytes by up to 4.4×, within the slack.
	RewriteFactor: 4,
}

// withDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	orDefault(&l.ModuleBytes, d.ModuleBytes)
	orDefault(&l.Functions, d.Functions)
	orDefault(&l.FunctionLocals, d.FunctionLocals)
	orDefault(&l.ModuleLocals, d.ModuleLocals)
	orDefault(&l.FunctionBytes, d.FunctionBytes)
	orDefault(&l.CodeBytes, d.CodeBytes)
	orDefault(&l.Nesting, d.Nesting)
	orDefault(&l.Tables, d.Tables)
	orDefault(&l.TableElements, d.TableElements)
	orDefault(&l.Globals, d.Globals)
	orDefault(&l.DataSegments, d.DataSegments)
	orDefault(&l.DataBytes, d.DataBytes)
	orDefault(&l.ElementEntries, d.ElementEntries)
	orDefault(&l.BranchTableEntries, d.BranchTableEntries)
	orDefault(&l.RewriteFactor, d.RewriteFactor)
	return l
}

func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// LimitError is a module over one of its Limits.
type LimitError struct {
	// Limit is the Limits field's JSON name, Value what the module asks
	// for, Max the limit.
	Limit      string
	Value, Max uint64
	// What says what was counted, for a person: "tables", "locals in
	// function 12".
	What string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%d %s, over the host's limit of %d (plugin_limits.%s)", e.Value, e.What, e.Max, e.Limit)
}

// over stops the rewrite with a LimitError when value exceeds max.
func (r *reader) over(limit string, value, max uint64, what string, args ...any) {
	if value > max {
		r.failWith(&LimitError{Limit: limit, Value: value, Max: max, What: fmt.Sprintf(what, args...)})
	}
}

// labelBytes is the module bytes each br_table label of a module's
// functions, together, needs (Limits.BranchTableEntries).
const labelBytes = 16

// moduleLabels is how many br_table labels all functions of the module
// may have.
func (m *module) moduleLabels() uint64 {
	return max(m.limits.BranchTableEntries, uint64(m.size)/labelBytes)
}
