#define VOX_NATIVE_PREFIX vad_
#include "voxhost_native.h"
/* vad.c marks its SIMD function __attribute__((target("simd128"))), a
 * WebAssembly target feature; natively its vectors are SSE without asking. */
#define target(feature)
#include "../../plugins/vad/src/vad.c"
#undef target
#include "native.h"

const vox_native_plugin vox_native_vad = {vox_init, vox_rate, vox_process, vox_event, vox_frame_buffer, sizeof vox_frame_buffer, &VOX_NATIVE(emits)};
