/*
 * voxhost_native.h — compiles a C plugin written on sdk/c/voxhost.h for the
 * host instead of wasm32, so that its own source can be measured beside its
 * WebAssembly build. Define VOX_NATIVE_PREFIX (gain_, resample_, ...)
 * and include this before the plugin's source: every name the SDK and the
 * ABI give a plugin (vox_process, vox_frame_buffer, ...) is renamed with the
 * prefix, so that several plugins link into one program, and the host
 * imports (log, emit) are defined here, doing nothing but count.
 *
 * A plugin's state is its C globals, so there is one instance of it per
 * process.
 */
#ifndef VOXHOST_NATIVE_H
#define VOXHOST_NATIVE_H

#include <stdint.h>

/* WebAssembly never fuses a multiply and an add; neither may the native
 * build, or its floats would round differently (whatever -march says). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define VOX_NATIVE_CAT_(a, b) a##b
#define VOX_NATIVE_CAT(a, b) VOX_NATIVE_CAT_(a, b)
#define VOX_NATIVE(name) VOX_NATIVE_CAT(VOX_NATIVE_PREFIX, name)

#define vox_process VOX_NATIVE(vox_process)
#define vox_init VOX_NATIVE(vox_init)
#define vox_rate VOX_NATIVE(vox_rate)
#define vox_event VOX_NATIVE(vox_event)
#define vox_buffer VOX_NATIVE(vox_buffer)
#define vox_frame_buffer VOX_NATIVE(vox_frame_buffer)
#define vox_host_log VOX_NATIVE(vox_host_log)
#define vox_host_emit VOX_NATIVE(vox_host_emit)
#define voxhost_abi_v1 VOX_NATIVE(voxhost_abi_v1)
#define vox_initialize_ VOX_NATIVE(vox_initialize_)
#define __wasm_call_ctors VOX_NATIVE(wasm_call_ctors)

#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

/* Native builds have their constructors run by the C runtime. */
void __wasm_call_ctors(void) {}

/* The emits, counted so that a benchmark can see the plugin speak. */
int64_t VOX_NATIVE(emits);

void vox_host_log(int32_t level, const char *msg, int32_t len) { (void)level, (void)msg, (void)len; }

void vox_host_emit(const char *name, int32_t name_len, const char *data, int32_t data_len) {
    (void)name, (void)name_len, (void)data, (void)data_len;
    VOX_NATIVE(emits)++;
}

#endif
