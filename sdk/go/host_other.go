//go:build !wasm

package voxhost

import (
	"os"
	"strconv"
	"unsafe"
)

// Off WebAssembly there is no host: a plugin's logic is then being tested
// with plain go test on the development machine, so log lines and events go
// to standard error. The SDK's own tests replace these hooks.
var (
	logHook = func(level int32, msg string) {
		os.Stderr.WriteString("voxhost log " + strconv.Itoa(int(level)) + ": " + msg + "\n")
	}
	emitHook = func(name, data string) {
		os.Stderr.WriteString("voxhost emit " + name + " " + data + "\n")
	}
)

func hostLog(level int32, ptr unsafe.Pointer, n int32) {
	logHook(level, unsafe.String((*byte)(ptr), n))
}

func hostEmit(namePtr unsafe.Pointer, nameLen int32, dataPtr unsafe.Pointer, dataLen int32) {
	emitHook(unsafe.String((*byte)(namePtr), nameLen), unsafe.String((*byte)(dataPtr), dataLen))
}
