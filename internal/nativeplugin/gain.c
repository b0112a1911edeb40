#define VOX_NATIVE_PREFIX gain_
#include "voxhost_native.h"
#include "../../plugins/gain/src/gain.c"
#include "native.h"

const vox_native_plugin vox_native_gain = {vox_init, 0, vox_process, 0, vox_frame_buffer, sizeof vox_frame_buffer, &VOX_NATIVE(emits)};
