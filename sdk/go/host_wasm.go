//go:build wasm

package voxhost

import "unsafe"

// The host's functions. Pointers cross as unsafe.Pointer, which both Go
// (1.21+) and TinyGo lower to an i32 address in linear memory; the data they
// point at is a Go string or slice that stays alive for the call, and the
// host copies it before returning.

//go:wasmimport voxhost log
func hostLog(level int32, ptr unsafe.Pointer, n int32)

//go:wasmimport voxhost emit
func hostEmit(namePtr unsafe.Pointer, nameLen int32, dataPtr unsafe.Pointer, dataLen int32)
