/* The exports of one natively compiled plugin (voxhost_native.h); an absent
 * optional export is NULL. */
#include <stdint.h>

typedef struct {
    int32_t (*init)(int32_t);
    int32_t (*rate)(int32_t);
    int32_t (*process)(int32_t);
    int32_t (*event)(int32_t, int32_t);
    int16_t *buffer;
    int32_t capacity;
    int64_t *emits;
} vox_native_plugin;

extern const vox_native_plugin vox_native_gain, vox_native_resample, vox_native_vad, vox_native_gate, vox_native_agc,
    vox_native_tone;
