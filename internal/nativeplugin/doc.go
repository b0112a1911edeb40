// Package nativeplugin compiles the stock C plugins' own source — gain,
// resample and vad, the very files their .wasm is built from — for the host
// through cgo, with voxhost_native.h standing in for the WebAssembly side of
// the C SDK, so that `voxhost bench hop` can put each plugin beside its
// WebAssembly build: what the sandbox costs this DSP, not a passthrough.
// The plugins' vectors (GCC vector types) become SSE here and WebAssembly
// SIMD there, with the same operations in the same order.
//
// Without cgo (CGO_ENABLED=0, as the container image is built) there are no
// native builds: Available is false for every plugin and Open fails. The
// Rust and AssemblyScript stock plugins (dtmf; gate, agc, tone) have none.
package nativeplugin
