package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/internal/preempt"
)

// DefaultMaxFrameMs is the longest frame an instance is sized for.
const DefaultMaxFrameMs = 100

// Plugin is a compiled, validated module, shared by every call that uses it.
type Plugin struct {
	name     string
	rt       *Runtime
	compiled wazero.CompiledModule
	version  int
	handles  handlePool

	hasInit, hasEvent, hasRate, hasInitialize bool
	// hasReference: the plugin asks for the far-end reference (ABI §11).
	hasReference bool
	// hasStart: the instrumentation moved a start function to
	// preempt.ExportStart, which instantiate calls.
	hasStart bool
}

// Name labels the plugin in errors, logs and metrics.
func (p *Plugin) Name() string { return p.name }

// WantsReference says whether the plugin exports vox_reference: it asks for
// the far-end reference before every frame (ABI §11).
func (p *Plugin) WantsReference() bool { return p.hasReference }

// Close releases the compiled module. Live instances keep working.
func (p *Plugin) Close(ctx context.Context) error { return p.compiled.Close(ctx) }

// probe makes a trial instance so that problems only running code reveals
// (an unsatisfiable import, a trapping or looping start function or
// vox_init, a buffer that does not fit) are reported at load time rather
// than when the first call arrives: it sets the instance up as a call with
// an empty configuration at 8 kHz would. A plugin that refuses the empty
// configuration with a status code is not broken (it may need settings);
// that is a warning.
func (p *Plugin) probe(ctx context.Context, warnings *[]string) error {
	in, err := p.instantiate(ctx, p.rt.budget, nil, nil)
	if err != nil {
		return err
	}
	defer in.Close(ctx)
	// The trial's log lines (a plugin complaining of the empty
	// configuration) would be noise at every load.
	err = in.configure(InstanceConfig{Logger: discardLogger})
	var perr *Error
	if errors.As(err, &perr) && perr.Kind == KindStatus {
		*warnings = append(*warnings, fmt.Sprintf("with an empty configuration ({}), %s returned %d (%s): calls must configure it", perr.Export, perr.Status, perr.Reason))
		return nil
	}
	return err
}

var discardLogger = slog.New(slog.DiscardHandler)

// Sink receives what an instance's plugin emits during a call.
type Sink interface {
	// Emit delivers a plugin event; name and data are copies the sink may keep.
	Emit(plugin, name string, data []byte)
}

// InstanceConfig describes the call an instance is made for.
type InstanceConfig struct {
	// Config is the plugin's JSON configuration object; nil means {}.
	Config []byte
	// InputRate is the sample rate the instance receives, in Hz; 0 means 8000.
	InputRate int
	// MaxFrameMs is the longest frame the instance must hold; 0 means
	// DefaultMaxFrameMs.
	MaxFrameMs int
	// Sink receives emitted events; nil drops them.
	Sink Sink
	// Logger receives the plugin's log lines, with the call's attributes;
	// nil means the runtime's logger.
	Logger *slog.Logger
	// Budget caps how long each call into the instance may run once it is
	// set up; zero means the runtime's default (Options.DefaultBudget). Set-up
	// calls get the larger of Budget and Options.InitBudget.
	Budget time.Duration
	// Stack is the machine stack vox_process runs on; instances given the
	// same one share it, so they must never run at the same time (the
	// stages of one pipeline, which run one after the other). nil: one of
	// the instance's own.
	Stack *MachineStack
	// Yield, if not nil, is offered the core at every budget tick once the
	// instance is set up (the call's *sched.Call): a call that has held
	// its scheduler slot long enough while a more urgent call waits gives
	// it up there, in the middle of a frame. The time it waits does not
	// count against the budget.
	Yield Yielder
}

// Yielder gives up the core for a while and says for how long; see
// InstanceConfig.Yield.
type Yielder interface {
	Yield() time.Duration
}

// Instance is one plugin's state for one call. Its methods must not be
// called concurrently: the ABI guarantees plugins strictly sequential calls.
type Instance struct {
	// What every frame reads and writes comes first, so that a frame of a
	// call whose instance has gone cold in the caches, as each has
	// among hundreds of calls, loads three cache lines of it rather than
	// five (RATIONALE.md, "The host's price per frame").

	// process is looked up once and kept: it runs every frame, on the
	// machine stack InstanceConfig.Stack gives it. Every other export
	// (vox_event, and the set-up's vox_buffer, vox_init, vox_rate) runs
	// through a handle borrowed from the plugin's pool (callengine.go):
	// events come a few times a call.
	process api.Function
	ctx     context.Context
	// stack is reused by every call: CallWithStack writes results over params.
	stack []uint64
	view  []byte
	mem   api.Memory
	// memSize is the memory's size when view was taken, and bufCap the
	// buffer's; fixedSize says the memory cannot grow (its declared
	// maximum is its size), so a call need not ask whether it did.
	memSize, bufCap uint32
	fixedSize       bool
	frame           uint64
	// hostCalls counts log and emit calls (and lines of output) during the
	// current call into the plugin, to cap them at MaxHostCallsPerCall;
	// outputBytes counts the bytes of stdout and stderr read, to cap them
	// at maxOutputBytes.
	hostCalls, outputBytes int
	budgetState

	plugin *Plugin
	mod    api.Module

	bufPtr uint32
	// refPtr and refView are the far-end reference buffer of a plugin
	// that exports vox_reference, of bufCap bytes; refView is nil otherwise.
	refPtr  uint32
	refView []byte

	inRate, outRate  int
	sink             Sink
	logger           *slog.Logger
	droppedHostCalls atomic.Uint64
	// emitDrops counts dropped emits by reason (drops.go); firstDrops
	// describes the first of each, which is also the one logged.
	emitDrops  [NumDropReasons]atomic.Uint64
	firstDrops [NumDropReasons]string
	// stdout and stderr receive the plugin's WASI output as log lines.
	stdout, stderr logWriter
	// yielder is InstanceConfig.Yield.
	yielder Yielder
}

type instanceKey struct{}

// callContext is the context of every call into an instance. wazero looks
// a value up in it on every call; a one-level context answers at once
// where a chain of context.WithValue would be walked on every hop.
type callContext struct {
	context.Context
	in *Instance
}

// Value returns the instance for instanceKey, so host functions find their
// caller, and nothing else: the parent is context.Background.
func (c *callContext) Value(key any) any {
	if _, ok := key.(instanceKey); ok {
		return c.in
	}
	return nil
}

// Instantiate makes a new instance for one call: it runs the module's start
// code, negotiates the frame buffer, passes the configuration to vox_init and
// learns the output rate from vox_rate.
func (p *Plugin) Instantiate(ctx context.Context, cfg InstanceConfig) (*Instance, error) {
	budget := cfg.Budget
	if budget <= 0 {
		budget = p.rt.budget
	}
	in, err := p.instantiate(ctx, budget, cfg.Logger, cfg.Stack)
	if err != nil {
		return nil, err
	}
	if err := in.configure(cfg); err != nil {
		_ = in.Close(ctx)
		return nil, err
	}
	in.limit = in.budget
	in.yielder = cfg.Yield
	return in, nil
}

// instantiate makes an instance and runs its start function and
// _initialize, under the init budget, which stays until Instantiate has
// configured the instance. What they log goes to logger (nil: the
// runtime's), the call's from the first line: a Go guest's runtime
// start-up is where it says why it cannot run.
func (p *Plugin) instantiate(ctx context.Context, budget time.Duration, logger *slog.Logger, stack *MachineStack) (*Instance, error) {
	if logger == nil {
		logger = p.rt.logger
	}
	in := &Instance{plugin: p, stack: make([]uint64, 2), logger: logger, inRate: abi.TelephonyRate, outRate: abi.TelephonyRate}
	in.budget = budget
	in.limit = max(budget, p.rt.initBudget)
	in.ctx = &callContext{Context: context.Background(), in: in}
	setupCtx := experimental.WithMemoryAllocator(in.ctx, p.rt.memory)
	in.stdout = logWriter{in: in, level: slog.LevelInfo}
	in.stderr = logWriter{in: in, level: slog.LevelWarn}
	cfg := p.rt.moduleConfig.WithStdout(&in.stdout).WithStderr(&in.stderr)
	mod, err := p.rt.rt.InstantiateModule(setupCtx, p.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: instantiation failed: %s", p.name, trapReason(err))
	}
	p.rt.live.Add(1)
	in.mod = mod
	in.mem = mod.Memory()
	in.process = mod.ExportedFunction(abi.ExportProcess)
	in.shareStack(stack)
	if p.hasStart {
		if err := in.callExport(preempt.ExportStart); err != nil {
			_ = in.Close(ctx)
			if in.overBudget {
				return nil, in.trap(startExport, 0, err)
			}
			return nil, fmt.Errorf("plugin %s: instantiation failed: %s", p.name, trapReason(err))
		}
	}
	if p.hasInitialize {
		if err := in.callExport("_initialize"); err != nil {
			_ = in.Close(ctx)
			return nil, in.trap("_initialize", 0, err)
		}
	}
	return in, nil
}

func (in *Instance) configure(cfg InstanceConfig) error {
	if cfg.Sink != nil {
		in.sink = cfg.Sink
	}
	if cfg.Logger != nil {
		in.logger = cfg.Logger
	}
	if cfg.InputRate > 0 {
		in.inRate = cfg.InputRate
	}
	maxMs := cfg.MaxFrameMs
	if maxMs <= 0 {
		maxMs = DefaultMaxFrameMs
	}
	config := cfg.Config
	if len(config) == 0 {
		config = []byte("{}")
	}
	frameBytes := func(rate int) int { return maxMs * rate / 1000 * abi.SampleBytes }
	if err := in.negotiate(max(frameBytes(in.inRate), len(config))); err != nil {
		return err
	}
	if in.plugin.hasInit {
		copy(in.view, config)
		if _, err := in.callStatus(abi.ExportInit, uint64(len(config))); err != nil {
			return err
		}
	}
	in.outRate = in.inRate
	if in.plugin.hasRate {
		out, err := in.callStatus(abi.ExportRate, uint64(in.inRate))
		if err != nil {
			return fmt.Errorf("%w: input of %d Hz", err, in.inRate)
		}
		if out == 0 {
			return &Error{Plugin: in.plugin.name, Export: abi.ExportRate, Kind: KindContract, Reason: fmt.Sprintf("returned an output rate of 0 Hz for an input of %d Hz", in.inRate)}
		}
		in.outRate = int(out)
	}
	if need := frameBytes(max(in.inRate, in.outRate)); need > int(in.bufCap) {
		return in.negotiate(need)
	}
	return nil
}

// negotiate asks the plugin for a buffer of capacity bytes and takes a view
// of it.
func (in *Instance) negotiate(capacity int) error {
	in.stack[0] = api.EncodeI32(int32(capacity))
	if err := in.callExport(abi.ExportBuffer); err != nil {
		return in.trap(abi.ExportBuffer, 0, err)
	}
	ptr := api.DecodeI32(in.stack[0])
	if ptr <= 0 {
		return &Error{Plugin: in.plugin.name, Export: abi.ExportBuffer, Kind: KindContract,
			Reason: fmt.Sprintf("cannot provide a frame buffer of %d bytes (vox_buffer returned %d): buffer too small", capacity, ptr)}
	}
	if ptr%abi.BufferAlign != 0 {
		return &Error{Plugin: in.plugin.name, Export: abi.ExportBuffer, Kind: KindContract,
			Reason: fmt.Sprintf("returned address %d, which is not %d-byte aligned", ptr, abi.BufferAlign)}
	}
	in.bufPtr, in.bufCap = uint32(ptr), uint32(capacity)
	if in.plugin.hasReference {
		ref, err := in.callStatus(abi.ExportReference, uint64(capacity))
		if err != nil {
			return err
		}
		switch {
		case ref == 0:
			return &Error{Plugin: in.plugin.name, Export: abi.ExportReference, Kind: KindContract,
				Reason: fmt.Sprintf("cannot provide a reference buffer of %d bytes (vox_reference returned 0)", capacity)}
		case ref%abi.BufferAlign != 0:
			return &Error{Plugin: in.plugin.name, Export: abi.ExportReference, Kind: KindContract,
				Reason: fmt.Sprintf("returned address %d, which is not %d-byte aligned", ref, abi.BufferAlign)}
		case uint32(ref) < in.bufPtr+in.bufCap && in.bufPtr < uint32(ref)+in.bufCap:
			return &Error{Plugin: in.plugin.name, Export: abi.ExportReference, Kind: KindContract,
				Reason: fmt.Sprintf("reference buffer at %d overlaps the frame buffer at %d (%d bytes each)", ref, in.bufPtr, in.bufCap)}
		}
		in.refPtr = uint32(ref)
	}
	return in.acquireView()
}

// acquireView re-reads the buffer's view: a view goes stale when memory grows
// past its capacity and wazero moves it.
func (in *Instance) acquireView() error {
	in.memSize = in.mem.Size()
	in.fixedSize = false
	if d := in.mem.Definition(); d != nil {
		max, bounded := d.Max()
		in.fixedSize = bounded && uint64(max)*65536 == uint64(in.memSize)
	}
	view, ok := in.mem.Read(in.bufPtr, in.bufCap)
	if !ok {
		return &Error{Plugin: in.plugin.name, Export: abi.ExportBuffer, Kind: KindContract,
			Reason: fmt.Sprintf("buffer at %d+%d lies outside memory of %d bytes", in.bufPtr, in.bufCap, in.memSize)}
	}
	in.view = view
	if in.plugin.hasReference {
		ref, ok := in.mem.Read(in.refPtr, in.bufCap)
		if !ok {
			return &Error{Plugin: in.plugin.name, Export: abi.ExportReference, Kind: KindContract,
				Reason: fmt.Sprintf("reference buffer at %d+%d lies outside memory of %d bytes", in.refPtr, in.bufCap, in.memSize)}
		}
		in.refView = ref
	}
	return nil
}

// Name names the instance's plugin.
func (in *Instance) Name() string { return in.plugin.name }

// Buffer is the frame buffer inside the plugin's memory, its full capacity.
// It is valid until the next call into the instance.
func (in *Instance) Buffer() []byte { return in.view }

// Reference is the far-end reference buffer inside the plugin's memory, of
// Buffer's capacity, for a plugin that exports vox_reference; nil for
// others. What is in it before a Process is the reference of that frame
// (ABI §11). It is valid until the next call into the instance.
func (in *Instance) Reference() []byte { return in.refView }

// InputRate is the sample rate the instance receives, in Hz.
func (in *Instance) InputRate() int { return in.inRate }

// OutputRate is the sample rate the instance produces, in Hz.
func (in *Instance) OutputRate() int { return in.outRate }

// Frames counts the calls to vox_process so far.
func (in *Instance) Frames() uint64 { return in.frame }

// DroppedHostCalls counts log and emit calls the host refused (bad pointers,
// bad names, oversize data).
func (in *Instance) DroppedHostCalls() uint64 { return in.droppedHostCalls.Load() }

// Process runs vox_process on the first samples of Buffer, in place, and
// returns the number of output samples now at the start of Buffer.
func (in *Instance) Process(samples int) (int, error) {
	in.frame++
	in.stack[0] = api.EncodeI32(int32(samples))
	if err := in.call(in.process); err != nil {
		return 0, in.trap(abi.ExportProcess, in.frame, err)
	}
	out := api.DecodeI32(in.stack[0])
	if !in.fixedSize && in.mem.Size() != in.memSize {
		if err := in.acquireView(); err != nil {
			return 0, err
		}
	}
	if out < 0 {
		return 0, &Error{Plugin: in.plugin.name, Export: abi.ExportProcess, Frame: in.frame, Kind: KindStatus, Status: out, Reason: StatusText(out)}
	}
	if uint32(out)*abi.SampleBytes > in.bufCap {
		return 0, &Error{Plugin: in.plugin.name, Export: abi.ExportProcess, Frame: in.frame, Kind: KindContract,
			Reason: fmt.Sprintf("returned %d samples, more than its %d-byte buffer holds", out, in.bufCap)}
	}
	return int(out), nil
}

// Event delivers an event of the ABI (abi.EventDTMF, …) and returns the
// plugin's non-negative result. payload, if not nil, is written at the start
// of the buffer first and its length passed as arg (abi.EventCallStart).
// Plugins without vox_event ignore events.
func (in *Instance) Event(kind, arg int32, payload []byte) (int, error) {
	if !in.plugin.hasEvent || in.mod == nil {
		return 0, nil
	}
	if payload != nil {
		if len(payload) > int(in.bufCap) {
			if err := in.negotiate(len(payload)); err != nil {
				return 0, err
			}
		}
		copy(in.view, payload)
		arg = int32(len(payload))
	}
	in.stack[0], in.stack[1] = api.EncodeI32(kind), api.EncodeI32(arg)
	if err := in.callExport(abi.ExportEvent); err != nil {
		return 0, in.trap(abi.ExportEvent, 0, err)
	}
	out := api.DecodeI32(in.stack[0])
	if in.mem.Size() != in.memSize {
		if err := in.acquireView(); err != nil {
			return 0, err
		}
	}
	if out < 0 {
		return 0, &Error{Plugin: in.plugin.name, Export: abi.ExportEvent, Kind: KindStatus, Status: out, Reason: StatusText(out)}
	}
	if uint32(out)*abi.SampleBytes > in.bufCap {
		return 0, &Error{Plugin: in.plugin.name, Export: abi.ExportEvent, Kind: KindContract,
			Reason: fmt.Sprintf("returned %d samples, more than its %d-byte buffer holds", out, in.bufCap)}
	}
	return int(out), nil
}

// callStatus calls a one-argument export that returns a status or a count.
func (in *Instance) callStatus(export string, arg uint64) (int32, error) {
	in.stack[0] = arg
	if err := in.callExport(export); err != nil {
		return 0, in.trap(export, 0, err)
	}
	out := api.DecodeI32(in.stack[0])
	if in.mem.Size() != in.memSize {
		if err := in.acquireView(); err != nil {
			return 0, err
		}
	}
	if out < 0 {
		return 0, &Error{Plugin: in.plugin.name, Export: export, Kind: KindStatus, Status: out, Reason: StatusText(out)}
	}
	return out, nil
}

func (in *Instance) trap(export string, frame uint64, err error) error {
	if in.overBudget {
		return &Error{Plugin: in.plugin.name, Export: export, Frame: frame, Kind: KindBudget,
			Budget: in.limit, Reason: "stopped by the host"}
	}
	return &Error{Plugin: in.plugin.name, Export: export, Frame: frame, Kind: KindTrap, Reason: trapReason(err)}
}

// trapReason keeps the first line of a wazero error without its prefix: the
// stack trace that follows names functions by index, useless to an operator.
func trapReason(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimPrefix(msg, "wasm error: ")
}

// Close ends the instance and frees its memory. It is safe to call twice.
func (in *Instance) Close(ctx context.Context) error {
	if in.mod == nil {
		return nil
	}
	// A last line without a newline is still the plugin's to log.
	in.stdout.flush()
	in.stderr.flush()
	err := in.mod.Close(ctx)
	// The function handles hold the call stacks wazero grew for them (a
	// deep recursion: tens of megabytes); an instance closed while its
	// call goes on, as a bypassed stage is, must not keep them.
	in.mod, in.view, in.refView, in.mem, in.process = nil, nil, nil, nil, nil
	in.plugin.rt.live.Add(-1)
	return err
}

// Reserve makes sure the buffer holds at least capacity bytes, asking the
// plugin for a larger one if needed.
func (in *Instance) Reserve(capacity int) error {
	if capacity <= int(in.bufCap) {
		return nil
	}
	return in.negotiate(capacity)
}

// MemoryPages is the size of the instance's linear memory, in 64 KiB pages.
// It is 0 once the instance is closed.
func (in *Instance) MemoryPages() uint32 {
	if in.mem == nil {
		return 0
	}
	return in.mem.Size() / 65536
}
