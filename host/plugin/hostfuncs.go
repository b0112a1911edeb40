package plugin

import (
	"context"
	"fmt"
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

// hostEmit checks an emit in the order of DropReason and passes it to the
// sink, or drops and counts it (ABI.md §4): the host never forwards what
// the ABI forbids, so a sink can trust that the name is an identifier and
// the data one JSON value.
func hostEmit(ctx context.Context, m api.Module, stack []uint64) {
	in := callerOf(ctx)
	if in == nil {
		return
	}
	namePtr, nameLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	dataPtr, dataLen := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	if !in.admit() {
		in.dropEmit(DropRateLimited, func() string {
			return fmt.Sprintf("more than %d log and emit calls in one call into the plugin", MaxHostCallsPerCall)
		})
		return
	}
	if nameLen == 0 || nameLen > abi.MaxEmitNameLen {
		in.dropEmit(DropBadName, func() string {
			return fmt.Sprintf("a name of %d bytes; names are 1-%d bytes of [a-z0-9_.-]", nameLen, abi.MaxEmitNameLen)
		})
		return
	}
	if dataLen > abi.MaxEmitDataLen {
		in.dropEmit(DropOversizeData, func() string {
			return fmt.Sprintf("%d bytes of data; the most is %d", dataLen, abi.MaxEmitDataLen)
		})
		return
	}
	mem := m.Memory()
	name, ok := mem.Read(namePtr, nameLen)
	if !ok {
		in.dropEmit(DropOutOfBounds, func() string {
			return fmt.Sprintf("the name at %d+%d lies outside memory of %d bytes", namePtr, nameLen, mem.Size())
		})
		return
	}
	// ABI.md: with no data, data_ptr is ignored.
	var data []byte
	if dataLen > 0 {
		if data, ok = mem.Read(dataPtr, dataLen); !ok {
			in.dropEmit(DropOutOfBounds, func() string {
				return fmt.Sprintf("the data of %q at %d+%d lies outside memory of %d bytes", name, dataPtr, dataLen, mem.Size())
			})
			return
		}
	}
	if i := badNameByte(name); i >= 0 {
		in.dropEmit(DropBadName, func() string {
			return fmt.Sprintf("name %s has %q at byte %d; names are 1-%d bytes of [a-z0-9_.-]", excerpt(name), name[i], i, abi.MaxEmitNameLen)
		})
		return
	}
	if len(data) > 0 && !validData(data) {
		in.dropEmit(DropInvalidData, func() string { return whyInvalidData(name, data) })
		return
	}
	if in.sink != nil {
		in.sink.Emit(in.plugin.name, string(name), append([]byte(nil), data...))
	}
}
