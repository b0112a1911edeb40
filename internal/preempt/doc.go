// Package preempt rewrites a WebAssembly module so that the host can stop
// it: every loop, and every function that makes calls or is not tiny,
// starts with a cheap check, so no execution can run for long without
// passing one.
//
// Fuel (the mode voxhost runs) adds a mutable i32 global, the fuel, and an
// imported function, ImportModule.ImportTick. Each check subtracts from the
// fuel the number of instructions it precedes (a call to an import counts
// ImportCallCost), never more than a refill. When the fuel drops below zero
// the check calls the tick, whose result refills it. Operations whose cost
// depends on their operands are charged by them and checked right away: a
// memory.fill or memory.copy larger than BulkChunk becomes a loop of chunks
// with a check after each (so a 16 MiB fill is no longer one instruction
// that holds its goroutine for milliseconds), table and memory.init
// operations are charged their count.
//
// The rewrite is also where a module's declarations meet the host's Limits
// (functions, locals, code, nesting, tables, globals, segments): a table
// gets a maximum within the cap, so that table.grow past it fails in the
// guest. The
// tick runs on the goroutine of the call, in Go: it reads the clock,
// decides whether the call is over its budget, and traps it by panicking if
// so. Because the guest leaves its compiled code at every tick, a plugin
// that never returns still lets the Go scheduler and garbage collector run,
// which no flag polled by guest code can ensure.
//
// The checks are built to cost a loop as little as possible. A function
// keeps the fuel in a local, loaded from the global at entry and after each
// call and stored back before each call and exit, unless it calls from
// inside a loop (then the global itself is cheaper). No loop can reach the
// tick from inside: wazevo would keep its values in memory. A loop leaves
// for a wrapper that calls the tick and enters it again at its head (see
// emitter.loop); a leaf loop, with no loop inside, is written twice, and
// its first copy leaves for the second, which ticks, so the copy it spends
// its time in has no tick at all (emitter.split). A leaf loop whose trip
// count is known when it starts is charged for all of it then and runs
// without checks (emitter.counted); a dispatch loop, as the Go compiler
// writes every function, is checked only where a jump may go back
// (finder.dispatching); and the arm of an if of 64 instructions or more is
// charged when it runs, not on every pass of its loop (heavyArm).
//
// Flag, kept to measure it against Fuel, adds a mutable i32 global exported
// as ExportStop; each check traps when another goroutine has set it to 1.
//
// Both modes move the start function, if any, out of the start section and
// export it as ExportStart, so the host can call it itself, under a budget,
// right after instantiation.
//
// Function indices shift by one in Fuel mode (an import comes before every
// defined function); calls, ref.func, exports, element segments, global
// initialisers and the name section are rewritten accordingly, as are the
// labels of branches that leave a wrapped loop. Custom sections that hold
// code offsets (DWARF, source maps, code metadata) would be wrong after the
// rewrite and are dropped; all others are kept.
//
// The rewrite reads the whole module and refuses anything malformed, so a
// module it accepts is safe to hand to wazero (see InstrumentMode).
package preempt
