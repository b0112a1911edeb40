// Package nativeplugin compiles the stock plugins' own source — the very
// files their .wasm is built from — for the host, so that `voxhost bench
// hop` can put each plugin beside its WebAssembly build: what the sandbox
// costs this DSP, not a passthrough. The C plugins (agc, gain, gate,
// resample, tone, vad) build through cgo, with voxhost_native.h standing in
// for the WebAssembly side of the C SDK; their vectors (GCC vector types)
// become SSE here and WebAssembly SIMD there, with the same operations in
// the same order. The Rust plugin, dtmf, is a static library cargo builds
// from its source (dtmf/, `make native-rust`), linked when voxhost is built
// with -tags nativerust; without the tag it has no native build.
//
// Without cgo (CGO_ENABLED=0, as the container image is built) there are no
// native builds: Available is false for every plugin and Open fails.
package nativeplugin
