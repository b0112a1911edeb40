package plugin

import (
	"bytes"
	"context"
	"crypto/rand"
	"log/slog"
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
// so a single host module serves every call. It records the functions
// plugins may import, with their types, for validate.
func (r *Runtime) instantiateWASI(ctx context.Context) error {
	compiled, err := wasi_snapshot_preview1.NewBuilder(r.rt).Compile(ctx)
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
// skipped. It never fails and never waits, so a chatty plugin cannot stall
// its call on fd_write. The host writes only during calls into the instance,
// which are sequential, so it needs no lock.
type logWriter struct {
	in    *Instance
	level slog.Level
	// line holds the current line until its newline arrives; it is allocated
	// on the first write, so a plugin that never prints costs nothing.
	line []byte
}

// Write implements io.Writer for wazero's fd_write.
func (w *logWriter) Write(p []byte) (int, error) {
	n := len(p)
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

// flush logs the pending line, if any. Close calls it for a last line that
// has no newline.
func (w *logWriter) flush() {
	line := bytes.TrimSuffix(w.line, []byte{'\r'})
	w.line = w.line[:0]
	if len(line) == 0 || w.in == nil {
		return
	}
	w.in.logger.Log(w.in.ctx, w.level, string(line), "plugin", w.in.plugin.name)
}
