/*
 * gain — multiplies every sample by a fixed gain, saturating at the 16-bit
 * limits. Config: {"db": -6} (default 0 dB, range -96..+48 dB).
 * The factor is kept in Q16 fixed point so the output is bit-exact on every
 * host: round(x * round(10^(db/20) * 65536) / 65536).
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

static int32_t gain_q16 = 65536;

VOX_INIT {
    double db = 0;
    if (vox_config_find(vox_bytes(), config_len, "db") >= 0 && !vox_config_number(vox_bytes(), config_len, "db", &db)) {
        vox_log(VOX_LOG_ERROR, "gain: \"db\" must be a number");
        return VOX_BAD_CONFIG;
    }
    if (db < -96 || db > 48) {
        vox_log(VOX_LOG_ERROR, "gain: \"db\" must lie between -96 and 48");
        return VOX_BAD_CONFIG;
    }
    gain_q16 = (int32_t)(vox_db_to_gain(db) * 65536.0 + 0.5);
    return VOX_OK;
}

VOX_PROCESS {
    int16_t *s = vox_samples();
    for (int32_t i = 0; i < samples; i++) {
        int64_t v = (int64_t)s[i] * gain_q16;
        s[i] = vox_sat16((int32_t)((v + 32768) >> 16));
    }
    return samples;
}
