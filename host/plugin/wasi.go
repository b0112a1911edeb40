package plugin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"math"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/voxhost/voxhost/abi"
)

// WASIModule is the import module of the WASI subset the host offers
// plugins: the clocks, random bytes, and stdout and stderr as log lines.
// Toolchains such as Go's wasip1 port import it even when the plugin itself
// uses nothing but voxhost.log and voxhost.emit.
const WASIModule = wasi_snapshot_preview1.ModuleName

// instantiateWASI provides wazero's wasi_snapshot_preview1 once for the whole
// runtime: its functions find the calling instance's clocks, random source
// and output streams in that instance's module configuration (newWASIConfig),
// so a single host module serves every call. The functions whose work grows
// with their arguments are the host's own (wasiOverrides): they cap what
// they are asked and check the call's budget as they go, where wazero's
// would loop over a million iovecs or fill 16 MiB with random bytes
// unstopped. It records the functions plugins may import, with their
// types, for validate.
func (r *Runtime) instantiateWASI(ctx context.Context) error {
	b := r.rt.NewHostModuleBuilder(WASIModule)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	for _, o := range wasiOverrides {
		b = b.NewFunctionBuilder().WithGoModuleFunction(o.fn, o.params, []api.ValueType{i32}).
			WithParameterNames(o.names...).Export(o.name)
	}
	compiled, err := b.Compile(ctx)
	if err != nil {
		return err
	}
	r.wasiFuncs = map[string]api.FunctionDefinition{}
	for name, def := range compiled.ExportedFunctions() {
		// ABI.md allows no network: sockets are refused at load time even
		// though, without a listener configured, they could only fail.
		if !strings.HasPrefix(name, "sock_") {
			r.wasiFuncs[name] = def
		}
	}
	_, err = r.rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig())
	return err
}

// WASI errno values (wasi_snapshot_preview1's errno enum).
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
)

// Caps on what one WASI call may ask of the host.
const (
	// maxIovecs caps the buffers of one fd_write or fd_read, as IOV_MAX
	// does on Linux.
	maxIovecs = 1024
	// maxSubscriptions caps one poll_oneoff; a guest without sockets or
	// files waits on a clock and its standard streams.
	maxSubscriptions = 64
	// randomChunk is how many random bytes random_get makes between two
	// budget checks.
	randomChunk = 64 << 10
	// maxOutputBytes caps the bytes of stdout and stderr the host reads in
	// one call into a plugin: as many full log lines as the log cap lets
	// through. The rest is reported written and dropped unread.
	maxOutputBytes = MaxHostCallsPerCall * abi.MaxLogLen
)

// wasiOverrides are the WASI functions the host implements itself.
var wasiOverrides = []struct {
	name   string
	fn     api.GoModuleFunc
	params []api.ValueType
	names  []string
}{
	{"fd_write", wasiFdWrite, []api.ValueType{i32, i32, i32, i32}, []string{"fd", "iovs", "iovs_len", "result.nwritten"}},
	{"fd_read", wasiFdRead, []api.ValueType{i32, i32, i32, i32}, []string{"fd", "iovs", "iovs_len", "result.nread"}},
	{"random_get", wasiRandomGet, []api.ValueType{i32, i32}, []string{"buf", "buf_len"}},
	{"poll_oneoff", wasiPollOneoff, []api.ValueType{i32, i32, i32, i32}, []string{"in", "out", "nsubscriptions", "result.nevents"}},
}

// wasiFdWrite writes to stdout and stderr, which are log lines (logWriter);
// every other descriptor is bad. Each buffer is checked against the budget.
func wasiFdWrite(ctx context.Context, m api.Module, stack []uint64) {
	in := callerOf(ctx)
	fd, iovs, count, result := api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	var w *logWriter
	switch {
	case in == nil:
		stack[0] = errnoBadf
		return
	case fd == 1:
		w = &in.stdout
	case fd == 2:
		w = &in.stderr
	default:
		stack[0] = errnoBadf
		return
	}
	if count > maxIovecs {
		stack[0] = errnoInval
		return
	}
	mem := m.Memory()
	vec, ok := mem.Read(iovs, count*8)
	if !ok {
		stack[0] = errnoFault
		return
	}
	written := uint32(0)
	for i := uint32(0); i < count; i++ {
		buf, ok := mem.Read(binary.LittleEndian.Uint32(vec[i*8:]), binary.LittleEndian.Uint32(vec[i*8+4:]))
		if !ok {
			stack[0] = errnoFault
			return
		}
		_, _ = w.Write(buf)
		written += uint32(min(len(buf), math.MaxUint32-int(written)))
		in.checkBudget()
	}
	if !mem.WriteUint32Le(result, written) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// wasiFdRead reads from stdin, which is at its end; every other descriptor
// is bad.
func wasiFdRead(_ context.Context, m api.Module, stack []uint64) {
	if fd := api.DecodeU32(stack[0]); fd != 0 {
		stack[0] = errnoBadf
		return
	}
	if !m.Memory().WriteUint32Le(api.DecodeU32(stack[3]), 0) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// wasiRandomGet fills a buffer from crypto/rand, a chunk at a time, checking
// the budget after each.
func wasiRandomGet(ctx context.Context, m api.Module, stack []uint64) {
	in := callerOf(ctx)
	buf, ok := m.Memory().Read(api.DecodeU32(stack[0]), api.DecodeU32(stack[1]))
	if !ok {
		stack[0] = errnoFault
		return
	}
	for len(buf) > 0 {
		n := min(len(buf), randomChunk)
		_, _ = rand.Read(buf[:n]) // never fails (Go 1.24+: it crashes the process instead)
		buf = buf[n:]
		if in != nil {
			in.checkBudget()
		}
	}
	stack[0] = errnoSuccess
}

// wasiPollOneoff answers every subscription at once: the host's clocks never
// sleep (see newWASIConfig), stdin is at its end and stdout and stderr never
// block, so nothing a plugin can wait on is ever not ready.
func wasiPollOneoff(_ context.Context, m api.Module, stack []uint64) {
	in, out, n, result := api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	if n == 0 || n > maxSubscriptions {
		stack[0] = errnoInval
		return
	}
	mem := m.Memory()
	subs, ok1 := mem.Read(in, n*48)
	events, ok2 := mem.Read(out, n*32)
	if !ok1 || !ok2 {
		stack[0] = errnoFault
		return
	}
	for i := uint32(0); i < n; i++ {
		sub, event := subs[i*48:(i+1)*48], events[i*32:(i+1)*32]
		errno := uint16(errnoSuccess)
		switch tag, fd := sub[8], binary.LittleEndian.Uint32(sub[16:]); {
		case tag == 0: // a clock
		case tag == 1 && fd != 0, tag == 2 && fd != 1 && fd != 2: // fd_read, fd_write
			errno = errnoBadf
		case tag > 2:
			stack[0] = errnoInval
			return
		}
		clear(event)
		copy(event, sub[:8]) // userdata
		binary.LittleEndian.PutUint16(event[8:], errno)
		event[10] = sub[8]
	}
	if !mem.WriteUint32Le(result, n) {
		stack[0] = errnoFault
		return
	}
	stack[0] = errnoSuccess
}

// newWASIConfig is the module configuration shared by every instance, before
// its output streams are attached: no filesystem (no preopened directory, so
// every path_open fails with EBADF), no environment, no arguments, stdin at
// end of file. wazero's defaults are deterministic fakes; plugins get the
// real clocks and a cryptographic random source instead. Sleep stays wazero's
// no-op, so poll_oneoff never parks the host thread that carries the call's
// audio: a C or Rust sleep returns at once (Go's scheduler, which rechecks
// the real clock, spins until its deadline instead).
func newWASIConfig() wazero.ModuleConfig {
	// An empty name makes the instance anonymous, so any number of calls can
	// instantiate the same module at once. The host calls _initialize itself.
	return wazero.NewModuleConfig().WithName("").WithStartFunctions().
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
}

// checkWASIImport returns the problem with an import from WASIModule, or "".
func (r *Runtime) checkWASIImport(def api.FunctionDefinition) string {
	_, name, _ := def.Import()
	want, ok := r.wasiFuncs[name]
	if !ok {
		if strings.HasPrefix(name, "sock_") {
			return "unknown import " + WASIModule + "." + name + ": the host's WASI offers no network"
		}
		return "unknown import " + WASIModule + "." + name + ": not a WASI function the host provides (it offers clocks, random and stdout/stderr, with no filesystem)"
	}
	got, need := signature(def.ParamTypes(), def.ResultTypes()), signature(want.ParamTypes(), want.ResultTypes())
	if got != need {
		return "import " + WASIModule + "." + name + " has signature " + got + " but the host provides " + need
	}
	return ""
}

// logWriter turns what a plugin writes to stdout or stderr into log lines of
// the plugin, as if it had called voxhost.log: one record per line, at most
// abi.MaxLogLen bytes (the rest of a longer line is cut), blank lines
// skipped, each counted against the same MaxHostCallsPerCall cap, and at
// most maxOutputBytes read per call into the plugin. It never fails and
// never waits, so a chatty plugin cannot stall its call on fd_write. The
// host writes only during calls into the instance, which are sequential, so
// it needs no lock.
type logWriter struct {
	in    *Instance
	level slog.Level
	// line holds the current line until its newline arrives; it is allocated
	// on the first write, so a plugin that never prints costs nothing.
	line []byte
}

// Write implements io.Writer for fd_write.
func (w *logWriter) Write(p []byte) (int, error) {
	n := len(p)
	room := maxOutputBytes - w.in.outputBytes
	if len(p) > room {
		w.in.droppedHostCalls.Add(1)
		p = p[:max(room, 0)]
	}
	w.in.outputBytes += len(p)
	for len(p) > 0 {
		chunk, rest, eol := bytes.Cut(p, []byte{'\n'})
		if room := abi.MaxLogLen - len(w.line); len(chunk) > room {
			chunk = chunk[:room]
		}
		w.line = append(w.line, chunk...)
		if !eol {
			break
		}
		w.flush()
		p = rest
	}
	return n, nil
}

// flush logs the pending line, if any, within the cap on host calls. Close
// calls it for a last line that has no newline.
func (w *logWriter) flush() {
	line := bytes.TrimSuffix(w.line, []byte{'\r'})
	w.line = w.line[:0]
	if len(line) == 0 || !w.in.admit() {
		return
	}
	w.in.logger.Log(w.in.ctx, w.level, string(line), "plugin", w.in.plugin.name)
}
