// Package plugin compiles, validates, caches, instantiates and calls voxhost
// plugins: WebAssembly modules that implement the ABI of package abi.
//
// One Runtime is shared by the whole process. Load compiles a module once and
// validates it against the ABI, returning every problem with a reason a person
// can act on. Instantiate makes one anonymous instance per call; an Instance
// looks its exports up once and calls them with a reused stack, so calling
// Process allocates nothing. A trap inside a plugin is an *Error naming the
// plugin, the export and the frame, never a panic of the host. Every module
// is instrumented at load time (internal/preempt, within the Limits a
// Runtime is given) so that a call that runs longer than its budget is
// stopped: an *Error of kind KindBudget.
//
// A program that embeds voxhost makes one Runtime and hands it to
// host/catalog (plugins by name) and host/server; it calls Instance
// itself only to run a plugin outside a call, as a test harness would.
package plugin
