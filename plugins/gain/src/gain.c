/*
 * gain — multiplies every sample by a fixed gain, saturating at the 16-bit
 * limits. Config: {"db": -6} (default 0 dB, range -96..+48 dB).
 * The factor is kept in Q16 fixed point so the output is bit-exact on every
 * host: round(x * round(10^(db/20) * 65536) / 65536).
 *
 * The product is split so that it fits 32-bit lanes: with g = hi 65536 + lo
 * (lo < 65536), (x g + 32768) >> 16 = x hi + ((x lo + 32768) >> 16) exactly,
 * since x hi 65536 is a multiple of 65536; |x lo| < 2^31 and |x hi| < 2^24.
 * So eight samples go through four-lane vectors at a time (GCC vector types:
 * WebAssembly SIMD here, SSE when the same source is compiled natively),
 * with the same bits as the scalar 64-bit form (gain_test.go checks every
 * input at several gains).
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"
#ifdef __wasm_simd128__
#include <wasm_simd128.h>
#endif

typedef int16_t i16x8 __attribute__((vector_size(16)));
typedef int16_t i16x8_unaligned __attribute__((vector_size(16), aligned(2)));
typedef int16_t i16x4 __attribute__((vector_size(8)));
typedef int32_t i32x4 __attribute__((vector_size(16)));

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
static inline i32x4 scale4(i16x4 x16, int32_t hi, int32_t lo) {
    i32x4 x = __builtin_convertvector(x16, i32x4);
    return x * hi + ((x * lo + 32768) >> 16);
}

/* Eight 32-bit lanes saturated to 16 bits: one instruction in WebAssembly,
 * a clamp and a truncation in C's vectors elsewhere. */
static inline i16x8 narrow8(i32x4 a, i32x4 b) {
#ifdef __wasm_simd128__
    return (i16x8)wasm_i16x8_narrow_i32x4((v128_t)a, (v128_t)b);
#else
    i32x4 m = a > 32767, n = a < -32768;
    a = (((a & ~m) | (32767 & m)) & ~n) | (-32768 & n);
    m = b > 32767, n = b < -32768;
    b = (((b & ~m) | (32767 & m)) & ~n) | (-32768 & n);
    i16x4 a16 = __builtin_convertvector(a, i16x4), b16 = __builtin_convertvector(b, i16x4);
    return __builtin_shufflevector(a16, b16, 0, 1, 2, 3, 4, 5, 6, 7);
#endif
}

VOX_PROCESS {
    int16_t *s = vox_samples();
    int32_t hi = gain_q16 >> 16, lo = gain_q16 & 0xffff, i = 0;
    for (; i + 8 <= samples; i += 8) {
        i16x8 x = *(i16x8_unaligned *)(s + i);
        *(i16x8_unaligned *)(s + i) = narrow8(scale4(__builtin_shufflevector(x, x, 0, 1, 2, 3), hi, lo),
                                             scale4(__builtin_shufflevector(x, x, 4, 5, 6, 7), hi, lo));
    }
    for (; i < samples; i++) {
        int32_t x = s[i];
        s[i] = vox_sat16(x * hi + ((x * lo + 32768) >> 16));
    }
    return samples;
}
