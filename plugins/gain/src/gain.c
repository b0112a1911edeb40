/*
 * gain — multiplies every sample by a fixed gain, saturating at the 16-bit
 * limits. Config: {"db": -6} (default 0 dB, range -96..+48 dB).
 * The factor is kept in Q16 fixed point so the output is bit-exact on every
 * host: round(x * round(10^(db/20) * 65536) / 65536).
 *
 * The product is split so that it fits 32-bit lanes: with g = hi 65536 + lo
 * (lo < 65536), (x g + 32768) >> 16 = x hi + ((x lo + 32768) >> 16) exactly,
 * since x hi 65536 is a multiple of 65536; |x lo| < 2^31 and |x hi| < 2^24.
 * So eight samples go through the WebAssembly SIMD lanes at once (i32x4
 * products, a saturating narrow back to i16x8), with the same bits as the
 * scalar 64-bit form (gain_test.go checks every input at several gains).
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"
#include <wasm_simd128.h>

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

/* x g / 65536, rounded, for four samples in 32-bit lanes. */
static inline v128_t scale4(v128_t x, v128_t hi, v128_t lo, v128_t half) {
    return wasm_i32x4_add(wasm_i32x4_mul(x, hi), wasm_i32x4_shr(wasm_i32x4_add(wasm_i32x4_mul(x, lo), half), 16));
}

VOX_PROCESS {
    int16_t *s = vox_samples();
    int32_t hi = gain_q16 >> 16, lo = gain_q16 & 0xffff, i = 0;
    v128_t vhi = wasm_i32x4_splat(hi), vlo = wasm_i32x4_splat(lo), half = wasm_i32x4_splat(32768);
    for (; i + 8 <= samples; i += 8) {
        v128_t x = wasm_v128_load(s + i);
        v128_t a = scale4(wasm_i32x4_extend_low_i16x8(x), vhi, vlo, half);
        v128_t b = scale4(wasm_i32x4_extend_high_i16x8(x), vhi, vlo, half);
        wasm_v128_store(s + i, wasm_i16x8_narrow_i32x4(a, b));
    }
    for (; i < samples; i++) {
        int32_t x = s[i];
        s[i] = vox_sat16(x * hi + ((x * lo + 32768) >> 16));
    }
    return samples;
}
