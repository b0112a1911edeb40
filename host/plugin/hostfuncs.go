package plugin

import (
	"context"
	"log/slog"

	"github.com/tetratelabs/wazero/api"

	"github.com/voxhost/voxhost/abi"
)

// instantiateHostModule provides the functions plugins import from the
// "voxhost" module. They find the calling instance through the context each
// Instance passes to its calls, so one host module serves every call.
func (r *Runtime) instantiateHostModule(ctx context.Context) error {
	i32 := api.ValueTypeI32
	_, err := r.rt.NewHostModuleBuilder(abi.HostModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostLog), []api.ValueType{i32, i32, i32}, nil).
		WithParameterNames("level", "ptr", "len").
		Export(abi.ImportLog).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(hostEmit), []api.ValueType{i32, i32, i32, i32}, nil).
		WithParameterNames("name_ptr", "name_len", "data_ptr", "data_len").
		Export(abi.ImportEmit).
		Instantiate(ctx)
	return err
}

func callerOf(ctx context.Context) *Instance {
	in, _ := ctx.Value(instanceKey{}).(*Instance)
	return in
}

// MaxHostCallsPerCall caps the log and emit calls one call into a plugin
// may make; the rest are dropped and counted. A plugin that emits in a
// tight loop floods neither the client nor the log (ABI.md §4 lets hosts
// rate-limit).
const MaxHostCallsPerCall = 32

// admit counts a host call and says whether it is within the cap.
func (in *Instance) admit() bool {
	in.hostCalls++
	if in.hostCalls > MaxHostCallsPerCall {
		in.droppedHostCalls.Add(1)
		return false
	}
	return true
}

func hostLog(ctx context.Context, m api.Module, stack []uint64) {
	in := callerOf(ctx)
	if in == nil || !in.admit() {
		return
	}
	level, ptr, n := api.DecodeI32(stack[0]), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	n = min(n, abi.MaxLogLen)
	msg, ok := m.Memory().Read(ptr, n)
	if !ok {
		in.droppedHostCalls.Add(1)
		return
	}
	// ABI.md: levels the ABI does not name are logged as errors.
	lvl := slog.LevelError
	switch level {
	case abi.LogDebug:
		lvl = slog.LevelDebug
	case abi.LogInfo:
		lvl = slog.LevelInfo
	case abi.LogWarn:
		lvl = slog.LevelWarn
	}
	in.logger.Log(ctx, lvl, string(msg), "plugin", in.plugin.name)
}

func hostEmit(ctx context.Context, m api.Module, stack []uint64) {
	in := callerOf(ctx)
	if in == nil || !in.admit() {
		return
	}
	namePtr, nameLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	dataPtr, dataLen := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	if nameLen == 0 || nameLen > abi.MaxEmitNameLen || dataLen > abi.MaxEmitDataLen {
		in.droppedHostCalls.Add(1)
		return
	}
	name, ok1 := m.Memory().Read(namePtr, nameLen)
	// ABI.md: with no data, data_ptr is ignored.
	data, ok2 := []byte(nil), true
	if dataLen > 0 {
		data, ok2 = m.Memory().Read(dataPtr, dataLen)
	}
	if !ok1 || !ok2 || !validEventName(name) {
		in.droppedHostCalls.Add(1)
		return
	}
	if in.sink != nil {
		in.sink.Emit(in.plugin.name, string(name), append([]byte(nil), data...))
	}
}

// validEventName admits the identifiers ABI.md allows: [a-z0-9_.-].
func validEventName(name []byte) bool {
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
