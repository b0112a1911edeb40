/*
 * tone — writes a tone, a beep pattern or comfort noise into the frame
 * (README.md), mixed with the input or in its place.
 *
 * The sine comes from a 32-bit phase accumulator and a 2048-point table
 * with linear interpolation (error about 1.2e-6 of full scale), so it is
 * phase-continuous across frames however long the call. The noise is white
 * (the sum of four uniform PCG32 draws, nearly Gaussian) and the same for
 * the same seed.
 *
 * The C port of the AssemblyScript plugin it replaced, operation for
 * operation (../c-stock/stock.h): the same output bits (RATIONALE.md).
 */
#include "voxhost.h"
#include "../../c-stock/stock.h"

#define TABLE_BITS 11
#define TABLE_N (1 << TABLE_BITS)
#define FRAC_BITS (32 - TABLE_BITS)
#define FRAC_SCALE (1.0 / (double)(1 << FRAC_BITS))
/* cos and sin of 2 pi / 2048, for the rotation that fills the table. */
#define ROT_C 0.9999952938095762
#define ROT_S 0.003067956762965976
#define SQRT2 1.4142135623730951

enum { KIND_TONE, KIND_BEEP, KIND_NOISE };

/* Configuration (defaults as in README.md). */
static int kind = KIND_TONE;
static double hz = 440.0, level_db = -20.0, on_ms = 200.0, off_ms = 800.0, ramp_ms = 5.0;
static int replace;
static uint64_t seed = 1;

/* Derived at vox_rate. */
static uint32_t inc;      /* phase increment per sample */
static double amp;        /* sine amplitude, or noise RMS, in samples */
static int32_t on_n;      /* beep: samples on */
static int32_t cycle_n;   /* beep: samples per on + off cycle */
static int32_t ramp_n;    /* beep: samples per edge */
static uint32_t ramp_inc; /* beep: phase step of the quarter sine the edges follow */

/* State. */
static uint32_t phase;
static int32_t cycle_pos;
static uint64_t rng, rng_inc;

/* sin(2 pi k / 2048) for k = 0 … 2048 (the last entry repeats the first). */
static float table[TABLE_N + 1];

static int32_t bad(const char *msg) {
    vox_log(VOX_LOG_ERROR, msg);
    return VOX_BAD_CONFIG;
}

/* The string member key, as one of the words of options ("a|b|c"): its index, -1 if absent, -2 if none. */
static int choice(int32_t len, const char *key, const char *options) {
    char word[17];
    int32_t i = vox_config_find(vox_bytes(), len, key);
    if (i < 0) return -1;
    int32_t n = vox_config_string(vox_bytes(), len, key, word, sizeof word);
    if (n < 0) return -2;
    for (int index = 0;; index++) {
        int32_t k = 0;
        while (options[k] && options[k] != '|' && k < n && options[k] == word[k]) k++;
        if (k == n && (options[k] == 0 || options[k] == '|')) return index;
        while (*options && *options != '|') options++;
        if (!*options) return -2;
        options++;
    }
}

static void fill_table(void) {
    /* Rotate (1, 0) by 2 pi / 2048 at each step, in f64: the error after a
     * full turn is about 1e-13, far under what f32 keeps. */
    double c = 1.0, s = 0.0;
    for (int k = 0; k < TABLE_N; k++) {
        table[k] = (float)s;
        double c2 = c * ROT_C - s * ROT_S;
        s = s * ROT_C + c * ROT_S;
        c = c2;
    }
    table[TABLE_N] = 0.0f;
}

static int32_t ms_to_samples(double ms, int32_t rate) {
    return (int32_t)__builtin_floor((ms * (double)rate) / 1000.0 + 0.5);
}

/* PCG32 (XSH RR): 32 random bits. */
static inline uint32_t next_random(void) {
    uint64_t old = rng;
    rng = old * 6364136223846793005ULL + rng_inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32 - rot) & 31));
}

static void setup(int32_t rate) {
    inc = (uint32_t)(uint64_t)__builtin_floor((hz / (double)rate) * 4294967296.0 + 0.5);
    double rms = STOCK_FULL_SCALE * stock_db_to_gain(level_db);
    amp = kind == KIND_NOISE ? rms : rms * SQRT2;
    on_n = ms_to_samples(on_ms, rate);
    if (on_n < 1) on_n = 1;
    cycle_n = on_n + ms_to_samples(off_ms, rate);
    ramp_n = ms_to_samples(ramp_ms, rate);
    if (ramp_n > on_n / 2) ramp_n = on_n / 2;
    ramp_inc = ramp_n > 0 ? (uint32_t)(1u << 30) / (uint32_t)ramp_n : 0; /* a quarter turn per edge */
    phase = 0;
    cycle_pos = 0;
    /* PCG32 seeding (pcg32_srandom_r with stream 54). */
    rng_inc = (54ULL << 1) | 1;
    rng = 0;
    next_random();
    rng += seed;
    next_random();
}

VOX_INIT {
    int k = choice(config_len, "kind", "tone|beep|noise");
    if (k == -2) return bad("tone: kind must be \"tone\", \"beep\" or \"noise\"");
    int m = choice(config_len, "mode", "mix|replace");
    if (m == -2) return bad("tone: mode must be \"mix\" or \"replace\"");
    double f, lvl, on, off, ramp, sd;
    /* hz above 0: from the smallest positive double. */
    if (!stock_number(config_len, "hz", 440.0, 0x1p-1074, 24000.0, "tone: hz must be a number above 0, under half the sample rate", &f) ||
        !stock_number(config_len, "level_dbfs", -20.0, -96.0, 0.0, "tone: level_dbfs must be a number from -96 to 0", &lvl) ||
        !stock_number(config_len, "on_ms", 200.0, 1.0, 60000.0, "tone: on_ms must be a number from 1 to 60000", &on) ||
        !stock_number(config_len, "off_ms", 800.0, 0.0, 60000.0, "tone: off_ms must be a number from 0 to 60000", &off) ||
        !stock_number(config_len, "ramp_ms", 5.0, 0.0, 100.0, "tone: ramp_ms must be a number from 0 to 100", &ramp) ||
        !stock_whole_number(config_len, "seed", 1.0, 0.0, 4294967295.0, "tone: seed must be a whole number from 0 to 4294967295", &sd))
        return VOX_BAD_CONFIG;
    kind = k < 0 ? KIND_TONE : k;
    replace = m == 1;
    hz = f;
    level_db = lvl;
    on_ms = on;
    off_ms = off;
    ramp_ms = ramp;
    seed = (uint64_t)sd;
    fill_table();
    setup(8000); /* vox_rate sets up again at the real rate */
    return VOX_OK;
}

VOX_RATE {
    if (input_rate < 8000 || input_rate > 48000) return VOX_BAD_RATE;
    if (kind != KIND_NOISE && !(hz < (double)input_rate / 2.0)) {
        vox_log(VOX_LOG_ERROR, "tone: hz must be under half the sample rate");
        return VOX_BAD_RATE;
    }
    setup(input_rate);
    return input_rate;
}

/* sin(2 pi ph / 2^32), interpolated from the table: both neighbours from
 * one 8-byte load (one bounds check under wazero, not two; RATIONALE.md,
 * "The WebAssembly tax on the stock DSP"). */
static inline double sin_at(uint32_t ph) {
    uint64_t w;
    __builtin_memcpy(&w, table + (ph >> FRAC_BITS), 8);
    double a = (double)stock_f32_((uint32_t)w), b = (double)stock_f32_((uint32_t)(w >> 32));
    return a + (b - a) * ((double)(int32_t)(ph & ((1u << FRAC_BITS) - 1)) * FRAC_SCALE);
}

/* v rounded, added to the sample x (or in its place), saturating. */
static inline int16_t put(int16_t x, double v, int mix) {
    int32_t y = stock_nearest(v);
    if (mix) y += x;
    return vox_sat16(y);
}

/* The next sample of noise of scale k. */
static inline double noise(double k) {
    double u = (double)(int32_t)next_random() + (double)(int32_t)next_random() + (double)(int32_t)next_random() +
               (double)(int32_t)next_random();
    return u * k;
}

/* The next sample of the tone, a, and its phase moved on by d. */
static inline double tone_at(uint32_t *ph, uint32_t d, double a) {
    double v = a * sin_at(*ph);
    *ph += d;
    return v;
}

/* The next sample of the beep: the tone under its on/off envelope. */
static inline double beep_at(uint32_t *ph, uint32_t d, double a, int32_t *pos) {
    double e = 0.0;
    if (*pos < on_n) {
        e = 1.0;
        /* Raised-cosine edges: sin^2 over a quarter turn. */
        if (*pos < ramp_n) {
            double q = sin_at((uint32_t)*pos * ramp_inc);
            e = q * q;
        } else if (*pos >= on_n - ramp_n) {
            double q = sin_at((uint32_t)(on_n - 1 - *pos) * ramp_inc);
            e = q * q;
        }
    }
    double v = a * e * sin_at(*ph);
    *ph += d;
    if (++*pos == cycle_n) *pos = 0;
    return v;
}

/* Runs s[0..samples) through put with the values NEXT gives, four samples
 * to a load and a store (stock_load4), then the rest one at a time; mix is
 * a constant in each copy, so the loop does not test it every sample. */
#define TONE_LOOP_MIX(NEXT, MIX)                                                                                 \
    do {                                                                                                         \
        int32_t i = 0;                                                                                           \
        for (; i + 4 <= samples; i += 4) {                                                                       \
            uint64_t in = stock_load4(s + i);                                                                    \
            int16_t y0 = put(stock_lane(in, 0), NEXT, MIX), y1 = put(stock_lane(in, 1), NEXT, MIX),              \
                    y2 = put(stock_lane(in, 2), NEXT, MIX), y3 = put(stock_lane(in, 3), NEXT, MIX);              \
            stock_store4(s + i, stock_pack4(y0, y1, y2, y3));                                                    \
        }                                                                                                        \
        for (; i < samples; i++) s[i] = put(s[i], NEXT, MIX);                                                    \
    } while (0)
#define TONE_LOOP(NEXT)                                                                                          \
    do {                                                                                                         \
        if (mix) TONE_LOOP_MIX(NEXT, 1);                                                                         \
        else TONE_LOOP_MIX(NEXT, 0);                                                                             \
    } while (0)

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / VOX_SAMPLE_BYTES) return VOX_BAD_LENGTH;
    int16_t *s = vox_samples();
    const int mix = !replace;
    const double a = amp;
    if (kind == KIND_NOISE) {
        /* Four uniform draws in [-1, 1) have variance 4/3: sqrt(3/4) makes it 1. */
        const double k = (a * 0.8660254037844386) / 2147483648.0;
        TONE_LOOP(noise(k));
        return samples;
    }
    uint32_t ph = phase;
    const uint32_t d = inc;
    if (kind == KIND_TONE || cycle_n == on_n) {
        TONE_LOOP(tone_at(&ph, d, a));
    } else {
        int32_t pos = cycle_pos;
        TONE_LOOP(beep_at(&ph, d, a, &pos));
        cycle_pos = pos;
    }
    phase = ph;
    return samples;
}
