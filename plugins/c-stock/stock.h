/*
 * stock.h — what the C stock plugins that began in AssemblyScript (gate,
 * agc, tone) share: the AssemblyScript SDK's config lookup and its levels
 * and gains (sdk/assemblyscript/assembly/level.ts), with e^x and ln x in
 * single precision exactly as AssemblyScript's standard library computes
 * Mathf.exp and Mathf.log: its ports of musl's expf.c and logf.c (ARM's
 * optimized-routines, MIT licence), table for table and operation for
 * operation. So every coefficient and gain of the C plugins is the bit
 * their AssemblyScript builds computed (RATIONALE.md, "gate, agc and tone
 * in C"), with no libm: WebAssembly's f64 arithmetic is IEEE 754 without
 * fused operations, and so is the same source compiled natively
 * (internal/nativeplugin/voxhost_native.h).
 *
 * Include it after voxhost.h.
 */
#ifndef VOX_STOCK_H
#define VOX_STOCK_H

#include <stdint.h>

/* Full scale of a sample: dBFS levels are RMS relative to 32767. */
#define STOCK_FULL_SCALE 32767.0
/* ln 10, for converting decibels. */
#define STOCK_LN10 2.302585092994046

static inline double stock_f64_(uint64_t u) { union { uint64_t u; double d; } v = {u}; return v.d; }
static inline uint64_t stock_u64_(double d) { union { double d; uint64_t u; } v = {d}; return v.u; }
static inline float stock_f32_(uint32_t u) { union { uint32_t u; float f; } v = {u}; return v.f; }
static inline uint32_t stock_u32_(float f) { union { float f; uint32_t u; } v = {f}; return v.u; }

/* exp2f_data_tab[i] = uint(2^(i/32)) - (i << 47) */
static const uint64_t stock_exp2f_tab_[32] = {
    0x3FF0000000000000, 0x3FEFD9B0D3158574, 0x3FEFB5586CF9890F, 0x3FEF9301D0125B51,
    0x3FEF72B83C7D517B, 0x3FEF54873168B9AA, 0x3FEF387A6E756238, 0x3FEF1E9DF51FDEE1,
    0x3FEF06FE0A31B715, 0x3FEEF1A7373AA9CB, 0x3FEEDEA64C123422, 0x3FEECE086061892D,
    0x3FEEBFDAD5362A27, 0x3FEEB42B569D4F82, 0x3FEEAB07DD485429, 0x3FEEA47EB03A5585,
    0x3FEEA09E667F3BCD, 0x3FEE9F75E8EC5F74, 0x3FEEA11473EB0187, 0x3FEEA589994CCE13,
    0x3FEEACE5422AA0DB, 0x3FEEB737B0CDC5E5, 0x3FEEC49182A3F090, 0x3FEED503B23E255D,
    0x3FEEE89F995AD3AD, 0x3FEEFF76F2FB5E47, 0x3FEF199BDD85529C, 0x3FEF3720DCEF9069,
    0x3FEF5818DCFBA487, 0x3FEF7C97337B9B5F, 0x3FEFA4AFA2A490DA, 0x3FEFD0765B6E4540,
};

/* e^x, f32 (musl expf.c; 0.502 ULP). */
static inline float stock_expf(float x) {
    const double shift = 0x1.8p+52, inv_ln2_n = 0x1.71547652b82fep+0 * 32;
    const double c0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32, c1 = 0x1.ebfce50fac4f3p-3 / 32 / 32,
                 c2 = 0x1.62e42ff0c52d6p-1 / 32;
    uint32_t ix = stock_u32_(x), top = ix >> 20 & 0x7FF;
    if (top >= 0x42B) {
        /* |x| >= 88 or x is NaN. */
        if (ix == 0xFF800000) return 0;
        if (top >= 0x7F8) return x + x;
        if (x > stock_f32_(0x42B17217)) return x * stock_f32_(0x7F000000); /* overflow */
        if (x < stock_f32_(0xC2CFF1B4)) return 0;                          /* underflow */
    }
    /* x 32 / ln 2 = k + r with r in [-1/2, 1/2] and k an integer. */
    double z = inv_ln2_n * (double)x;
    double kd = z + shift;
    uint64_t ki = stock_u64_(kd);
    double r = z - (kd - shift);
    /* exp(x) = 2^(k/32) 2^(r/32) ~ s (c0 r^3 + c1 r^2 + c2 r + 1) */
    uint64_t t = stock_exp2f_tab_[ki & 31] + (ki << 47);
    double s = stock_f64_(t);
    double p = c0 * r + c1;
    double y = c2 * r + 1;
    y += p * (r * r);
    y *= s;
    return (float)y;
}

/* invc, logc pairs: the 16 subintervals of logf's reduction. */
static const uint64_t stock_logf_tab_[32] = {
    0x3FF661EC79F8F3BE, 0xBFD57BF7808CAADE, 0x3FF571ED4AAF883D, 0xBFD2BEF0A7C06DDB,
    0x3FF49539F0F010B0, 0xBFD01EAE7F513A67, 0x3FF3C995B0B80385, 0xBFCB31D8A68224E9,
    0x3FF30D190C8864A5, 0xBFC6574F0AC07758, 0x3FF25E227B0B8EA0, 0xBFC1AA2BC79C8100,
    0x3FF1BB4A4A1A343F, 0xBFBA4E76CE8C0E5E, 0x3FF12358F08AE5BA, 0xBFB1973C5A611CCC,
    0x3FF0953F419900A7, 0xBFA252F438E10C1E, 0x3FF0000000000000, 0,
    0x3FEE608CFD9A47AC, 0x3FAAA5AA5DF25984, 0x3FECA4B31F026AA0, 0x3FBC5E53AA362EB4,
    0x3FEB2036576AFCE6, 0x3FC526E57720DB08, 0x3FE9C2D163A1AA2D, 0x3FCBC2860D224770,
    0x3FE886E6037841ED, 0x3FD1058BC8A07EE1, 0x3FE767DCF5534862, 0x3FD4043057B6EE09,
};

/* ln x, f32 (musl logf.c; 0.818 ULP). */
static inline float stock_logf(float x) {
    const double ln2 = 0x1.62e42fefa39efp-1, a0 = -0x1.00ea348b88334p-2, a1 = 0x1.5575b0be00b6ap-2,
                 a2 = -0x1.ffffef20a4123p-2;
    uint32_t ux = stock_u32_(x);
    if (ux - 0x00800000 >= 0x7F800000 - 0x00800000) {
        /* x < 0x1p-126, infinite or NaN. */
        if ((ux << 1) == 0) return -__builtin_inff();
        if (ux == 0x7F800000) return x;
        if ((ux >> 31) || (ux << 1) >= 0xFF000000) return (x - x) / (x - x);
        /* Subnormal: normalise it. */
        ux = stock_u32_(x * 0x1p23f);
        ux -= 23u << 23;
    }
    /* x = 2^k z, z in [0.7, 1.4) and exact; c is near the centre of z's subinterval. */
    uint32_t tmp = ux - 0x3F330000;
    uint32_t i = (tmp >> 19) & 15;
    int32_t k = (int32_t)tmp >> 23;
    uint32_t iz = ux - (tmp & 0x1FFu << 23);
    double invc = stock_f64_(stock_logf_tab_[2 * i]), logc = stock_f64_(stock_logf_tab_[2 * i + 1]);
    double z = (double)stock_f32_(iz);
    /* log(x) = log1p(z/c - 1) + log(c) + k ln 2 */
    double r = z * invc - 1;
    double y0 = logc + (double)k * ln2;
    double r2 = r * r;
    double y = a1 * r + a2;
    y += a0 * r2;
    y = y * r2 + (y0 + r);
    return (float)y;
}

/* e^x through the f32 exp, in f64 (level.ts's expf). */
static inline double stock_exp(double x) { return (double)stock_expf((float)x); }

/* The linear gain of a level in dB: 10^(db/20). */
static inline double stock_db_to_gain(double db) { return stock_exp(db * (STOCK_LN10 / 20.0)); }

/* The mean square, in samples², of an RMS level in dBFS. */
static inline double stock_dbfs_to_mean_square(double db) {
    double a = STOCK_FULL_SCALE * stock_db_to_gain(db);
    return a * a;
}

/* The number member key of the config (the first len bytes of the frame
 * buffer), fallback if it is absent, in *out: 1 if it lies in [lo, hi];
 * else 0, with why logged at error level (a member that is not a number
 * is out of every range, as the AssemblyScript SDK's JsonView.number reads
 * it as NaN). */
static inline int stock_number(int32_t len, const char *key, double fallback, double lo, double hi, const char *why,
                               double *out) {
    double v = fallback;
    if (vox_config_find(vox_bytes(), len, key) >= 0 && !vox_config_number(vox_bytes(), len, key, &v))
        v = __builtin_nan("");
    if (!(v >= lo && v <= hi)) {
        vox_log(VOX_LOG_ERROR, why);
        return 0;
    }
    *out = v;
    return 1;
}

/* stock_number for a whole number. */
static inline int stock_whole_number(int32_t len, const char *key, double fallback, double lo, double hi, const char *why,
                                     double *out) {
    if (!stock_number(len, key, fallback, lo, hi, why, out)) return 0;
    if (__builtin_floor(*out) == *out) return 1;
    vox_log(VOX_LOG_ERROR, why);
    return 0;
}

/* Four samples at a time: one 8-byte load and one 8-byte store instead of
 * four of each, in the same order of samples. Under wazero every access to
 * linear memory is bounds-checked (eight instructions), so a per-sample loop
 * pays two checks a sample; a block of four pays two for all four
 * (RATIONALE.md, "The WebAssembly tax on the stock DSP"). Lane k is sample
 * k of the block (little-endian, as WebAssembly and the native hosts are). */
static inline uint64_t stock_load4(const int16_t *s) {
    uint64_t w;
    __builtin_memcpy(&w, s, 8);
    return w;
}
static inline int16_t stock_lane(uint64_t w, int k) { return (int16_t)(uint16_t)(w >> (16 * k)); }
static inline uint64_t stock_pack4(int16_t a, int16_t b, int16_t c, int16_t d) {
    return (uint64_t)(uint16_t)a | (uint64_t)(uint16_t)b << 16 | (uint64_t)(uint16_t)c << 32 |
           (uint64_t)(uint16_t)d << 48;
}
static inline void stock_store4(int16_t *s, uint64_t w) { __builtin_memcpy(s, &w, 8); }

/* Rounds to the nearest integer, ties to even (WebAssembly's f64.nearest). */
static inline int32_t stock_nearest(double x) { return (int32_t)__builtin_rint(x); }

#endif
