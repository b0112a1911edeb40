package plugin

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/internal/preempt"
)

var (
	i32 = api.ValueTypeI32
	// abiExports are the function exports of ABI v1 and their types.
	abiExports = []struct {
		name            string
		params, results []api.ValueType
		required        bool
	}{
		{abi.ExportBuffer, []api.ValueType{i32}, []api.ValueType{i32}, true},
		{abi.ExportProcess, []api.ValueType{i32}, []api.ValueType{i32}, true},
		{abi.ExportInit, []api.ValueType{i32}, []api.ValueType{i32}, false},
		{abi.ExportEvent, []api.ValueType{i32, i32}, []api.ValueType{i32}, false},
		{abi.ExportRate, []api.ValueType{i32}, []api.ValueType{i32}, false},
		{abi.ExportReference, []api.ValueType{i32}, []api.ValueType{i32}, false},
		{abi.VersionMarker, nil, nil, true},
	}
	// hostImports are the functions the host provides and their types.
	hostImports = map[string][]api.ValueType{
		abi.ImportLog:  {i32, i32, i32},
		abi.ImportEmit: {i32, i32, i32, i32},
	}
)

// Report is what Inspect finds in a module.
type Report struct {
	Plugin     string   `json:"plugin"`
	Size       int      `json:"size_bytes"`
	Valid      bool     `json:"valid"`
	ABIVersion int      `json:"abi_version"`
	Exports    []Extern `json:"exports"`
	Imports    []Extern `json:"imports"`
	// MemoryMinPages and MemoryMaxPages describe the exported memory;
	// MemoryMaxPages is 0 when the module declares no maximum.
	MemoryMinPages uint32   `json:"memory_min_pages"`
	MemoryMaxPages uint32   `json:"memory_max_pages"`
	Problems       []string `json:"problems"`
	Warnings       []string `json:"warnings"`
}

// Extern is one import or export of a module.
type Extern struct {
	Module string `json:"module,omitempty"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	// Type is a function's signature or a memory's limits.
	Type string `json:"type"`
}

func (rep *Report) describe(m wazero.CompiledModule) {
	for name, def := range m.ExportedFunctions() {
		if name == preempt.ExportStart {
			continue // the start function, moved by the instrumentation
		}
		rep.Exports = append(rep.Exports, Extern{Name: name, Kind: "func", Type: signature(def.ParamTypes(), def.ResultTypes())})
	}
	for name, def := range m.ExportedMemories() {
		rep.Exports = append(rep.Exports, Extern{Name: name, Kind: "memory", Type: memoryLimits(def)})
		if name == abi.ExportMemory {
			rep.MemoryMinPages = def.Min()
			if max, ok := def.Max(); ok {
				rep.MemoryMaxPages = max
			}
		}
	}
	for _, def := range m.ImportedFunctions() {
		mod, name, _ := def.Import()
		if mod == preempt.ImportModule {
			continue // added by the instrumentation
		}
		rep.Imports = append(rep.Imports, Extern{Module: mod, Name: name, Kind: "func", Type: signature(def.ParamTypes(), def.ResultTypes())})
	}
	for _, def := range m.ImportedMemories() {
		mod, name, _ := def.Import()
		rep.Imports = append(rep.Imports, Extern{Module: mod, Name: name, Kind: "memory", Type: memoryLimits(def)})
	}
	sort.Slice(rep.Exports, func(i, j int) bool { return rep.Exports[i].Name < rep.Exports[j].Name })
	sort.SliceStable(rep.Imports, func(i, j int) bool {
		return rep.Imports[i].Module+"."+rep.Imports[i].Name < rep.Imports[j].Module+"."+rep.Imports[j].Name
	})
}

func memoryLimits(def api.MemoryDefinition) string {
	if max, ok := def.Max(); ok {
		return fmt.Sprintf("pages %d..%d", def.Min(), max)
	}
	return fmt.Sprintf("pages %d..", def.Min())
}

// validate checks the module against ABI v1 and returns every problem. It
// records the ABI version it finds in p.version.
func (p *Plugin) validate(limitPages uint32, warnings *[]string) []string {
	var problems []string
	m := p.compiled
	funcs := m.ExportedFunctions()

	var markers []int
	for name := range funcs {
		if rest, ok := strings.CutPrefix(name, abi.VersionMarkerPrefix); ok {
			if v, err := strconv.Atoi(rest); err == nil && v > 0 {
				markers = append(markers, v)
			}
		}
	}
	sort.Ints(markers)
	switch {
	case len(markers) == 0:
		problems = append(problems, fmt.Sprintf("no ABI version marker (export a function named %s)", abi.VersionMarker))
	case len(markers) > 1:
		p.version = markers[len(markers)-1]
		problems = append(problems, fmt.Sprintf("more than one ABI version marker: versions %v", markers))
	default:
		p.version = markers[0]
		if p.version != abi.Version {
			problems = append(problems, fmt.Sprintf("ABI v%d plugin on a v%d host", p.version, abi.Version))
		}
	}
	// A plugin of another ABI version has other exports: checking them against
	// v1 would bury the one problem that matters.
	if p.version != 0 && p.version != abi.Version {
		return problems
	}

	for _, want := range abiExports {
		def, ok := funcs[want.name]
		if !ok {
			if want.required && want.name != abi.VersionMarker {
				problems = append(problems, "missing export "+want.name)
			}
			continue
		}
		got := signature(def.ParamTypes(), def.ResultTypes())
		if need := signature(want.params, want.results); got != need {
			problems = append(problems, fmt.Sprintf("export %s has signature %s but the ABI needs %s", want.name, got, need))
		}
	}
	if _, ok := funcs["_start"]; ok {
		problems = append(problems, "exports _start: a plugin must be a reactor, not a command (build with -mexec-model=reactor or -buildmode=c-shared)")
	}
	if def, ok := funcs["_initialize"]; ok {
		if len(def.ParamTypes())+len(def.ResultTypes()) != 0 {
			problems = append(problems, "export _initialize has signature "+signature(def.ParamTypes(), def.ResultTypes())+" but must be () -> ()")
		}
		p.hasInitialize = true
	}

	mems := m.ExportedMemories()
	if mem, ok := mems[abi.ExportMemory]; !ok {
		problems = append(problems, "missing export memory (a plugin must define and export its linear memory as \"memory\")")
	} else {
		if mem.Min() > limitPages {
			problems = append(problems, fmt.Sprintf("memory minimum of %d pages exceeds the host limit of %d pages", mem.Min(), limitPages))
		}
		if max, ok := mem.Max(); !ok || max != mem.Min() {
			*warnings = append(*warnings, fmt.Sprintf("memory can grow (%s): declare min = max so the host never re-acquires its view of the buffer", memoryLimits(mem)))
		}
	}
	for _, def := range m.ImportedMemories() {
		mod, name, _ := def.Import()
		problems = append(problems, fmt.Sprintf("unknown import %s.%s (memory): a plugin must define its own memory", mod, name))
	}
	for _, def := range m.ImportedFunctions() {
		mod, name, _ := def.Import()
		if mod == preempt.ImportModule {
			continue // added by the instrumentation
		}
		if mod == WASIModule {
			if problem := p.rt.checkWASIImport(def); problem != "" {
				problems = append(problems, problem)
			}
			continue
		}
		params, known := hostImports[name]
		if mod != abi.HostModule || !known {
			problems = append(problems, fmt.Sprintf("unknown import %s.%s: a plugin may import only %s.%s, %s.%s and the host's WASI (%s)", mod, name, abi.HostModule, abi.ImportLog, abi.HostModule, abi.ImportEmit, WASIModule))
			continue
		}
		if got, need := signature(def.ParamTypes(), def.ResultTypes()), signature(params, nil); got != need {
			problems = append(problems, fmt.Sprintf("import %s.%s has signature %s but the host provides %s", mod, name, got, need))
		}
	}
	_, p.hasInit = funcs[abi.ExportInit]
	_, p.hasEvent = funcs[abi.ExportEvent]
	_, p.hasRate = funcs[abi.ExportRate]
	_, p.hasReference = funcs[abi.ExportReference]
	_, p.hasStart = funcs[preempt.ExportStart]
	return problems
}
