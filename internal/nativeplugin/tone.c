#define VOX_NATIVE_PREFIX tone_
#include "voxhost_native.h"
#include "../../plugins/tone/src/tone.c"
#include "native.h"

const vox_native_plugin vox_native_tone = {vox_init, vox_rate, vox_process, 0, vox_frame_buffer, sizeof vox_frame_buffer, &VOX_NATIVE(emits)};
