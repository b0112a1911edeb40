#define VOX_NATIVE_PREFIX resample_
#include "voxhost_native.h"
#include "../../plugins/resample/src/resample.c"
#include "native.h"

const vox_native_plugin vox_native_resample = {vox_init, vox_rate, vox_process, vox_event, vox_frame_buffer, sizeof vox_frame_buffer, &VOX_NATIVE(emits)};
