/*
 * agc — automatic gain control toward a target speech level (README.md).
 *
 * The signal is cut into 1 ms blocks. At the end of each block the detector
 * updates and the gain (in dB) takes one step toward the gain the level
 * calls for; the linear gain is ramped sample by sample across the next
 * block, so it never jumps, within a frame or between frames. A soft knee
 * and saturation keep every output sample inside 16 bits.
 *
 * The C port of the AssemblyScript plugin it replaced, operation for
 * operation (../c-stock/stock.h): the same output bits (RATIONALE.md).
 */
#include "voxhost.h"
#include "../../c-stock/stock.h"

/* The soft knee starts at -3 dBFS (23197); above it, peaks bend toward full scale. */
#define KNEE 23197.0
#define HEADROOM (STOCK_FULL_SCALE - KNEE)
/* Short-term level follower (gate and fast path): 10 ms time constant. */
#define FAST_MS 10.0
/* The short-term level takes over when it is this many dB (as a power ratio) above the long-term level: 6 dB. */
#define FAST_ALLOWANCE 0.25118864315095796 /* 10^(-6/10) */
/* Longest window_ms: the ring holds the sum of squares of each 1 ms block. */
#define MAX_WINDOW 1000

/* Configuration (defaults as in README.md). */
static double target_db = -18.0, max_gain_db = 24.0, min_gain_db = -12.0, attack_ms = 10.0, release_ms = 500.0,
              gate_db = -50.0;
static int32_t window_ms = 250;

/* Derived at vox_rate. */
static int32_t block_len = 8;
static double inv_block = 0.125;
static double target_ms; /* target mean square, in samples^2 */
static double gate_ms;
static double a_fast, a_attack, a_release;

/* State. */
static int32_t pos;        /* samples into the current block */
static uint64_t acc;       /* sum of x^2 over the current block */
static double fast;        /* short-term mean square */
static int32_t ring_pos, ring_count;
static uint64_t ring_sum;  /* sum of the ring's block sums */
static double gain_db;     /* smoothed gain, dB */
static double gain = 1;    /* linear gain applied to the current sample */
static double gain_end = 1; /* linear gain at the end of the current block */
static double step;        /* per-sample increment of gain in this block */
/* Last: at the default window_ms a call touches its first 2000 bytes. */
static uint64_t ring[MAX_WINDOW];

/* Coefficient of a one-pole step per block that covers 90% of a step in ms. */
static double coef90(double block_sec, double ms) { return 1.0 - stock_exp((-STOCK_LN10 * block_sec * 1000.0) / ms); }

static void setup(int32_t rate) {
    block_len = rate / 1000; /* 1 ms blocks (11 samples at 11025 Hz) */
    inv_block = 1.0 / (double)block_len;
    double block_sec = (double)block_len / (double)rate;
    target_ms = stock_dbfs_to_mean_square(target_db);
    gate_ms = stock_dbfs_to_mean_square(gate_db);
    a_fast = 1.0 - stock_exp((-block_sec * 1000.0) / FAST_MS);
    a_attack = coef90(block_sec, attack_ms);
    a_release = coef90(block_sec, release_ms);
    pos = 0;
    acc = 0;
    fast = 0;
    ring_pos = 0;
    ring_count = 0;
    ring_sum = 0;
    gain_db = 0; /* unity to start with, inside [min_gain_db, max_gain_db] */
    gain = 1;
    gain_end = 1;
    step = 0;
}

VOX_RATE {
    if (input_rate < 8000 || input_rate > 48000) return VOX_BAD_RATE;
    setup(input_rate);
    return input_rate;
}

VOX_INIT {
    double target, max_g, min_g, att, rel, gate, win;
    if (!stock_number(config_len, "target_dbfs", -18.0, -50.0, -3.0, "agc: target_dbfs must be a number from -50 to -3", &target) ||
        !stock_number(config_len, "max_gain_db", 24.0, 0.0, 40.0, "agc: max_gain_db must be a number from 0 to 40", &max_g) ||
        !stock_number(config_len, "min_gain_db", -12.0, -40.0, 0.0, "agc: min_gain_db must be a number from -40 to 0", &min_g) ||
        !stock_number(config_len, "attack_ms", 10.0, 1.0, 5000.0, "agc: attack_ms must be a number from 1 to 5000", &att) ||
        !stock_number(config_len, "release_ms", 500.0, 1.0, 60000.0, "agc: release_ms must be a number from 1 to 60000", &rel) ||
        !stock_number(config_len, "gate_dbfs", -50.0, -96.0, -10.0, "agc: gate_dbfs must be a number from -96 to -10", &gate) ||
        !stock_whole_number(config_len, "window_ms", 250.0, 10.0, (double)MAX_WINDOW, "agc: window_ms must be a whole number from 10 to 1000", &win))
        return VOX_BAD_CONFIG;
    target_db = target;
    max_gain_db = max_g;
    min_gain_db = min_g;
    attack_ms = att;
    release_ms = rel;
    gate_db = gate;
    window_ms = (int32_t)win;
    setup(8000);
    return VOX_OK;
}

/* End of a 1 ms block: update the detector and plan the next block's gain ramp. */
static void end_block(void) {
    uint64_t sum = acc;
    acc = 0;
    pos = 0;
    double ms = (double)(int64_t)sum * inv_block; /* < 2^63: a signed conversion, which is faster */
    fast += (ms - fast) * a_fast;
    gain = gain_end; /* exact, whatever the rounding of the ramp */
    if (fast > gate_ms && ms * 10.0 > gate_ms) {
        /* Active: the last 10 ms are above the gate, and this block is above
         * the gate - 10 dB (the block alone would let noise just under the
         * gate through now and then; the 10 ms level alone would count the
         * first tens of ms of a pause, while it decays). The block joins the
         * long-term window: the last window_ms of audio above the gate, so
         * pauses do not dilute the level. */
        if (ring_count == window_ms) ring_sum -= ring[ring_pos];
        else ring_count++;
        ring[ring_pos] = sum;
        ring_sum += sum;
        if (++ring_pos == window_ms) ring_pos = 0;
        double level = (double)(int64_t)ring_sum / ((double)ring_count * (double)block_len);
        double quick = fast * FAST_ALLOWANCE;
        if (quick > level) level = quick;
        double want = max_gain_db;
        if (level > 0) {
            want = (10.0 / STOCK_LN10) * (double)stock_logf((float)(target_ms / level));
            if (want > max_gain_db) want = max_gain_db;
            if (want < min_gain_db) want = min_gain_db;
        }
        gain_db += (want - gain_db) * (want < gain_db ? a_attack : a_release);
        gain_end = stock_db_to_gain(gain_db);
    }
    /* Below the gate the gain holds: gain_end stays, and the ramp is flat. */
    step = (gain_end - gain) * inv_block;
}

/* Applies the soft knee above -3 dBFS, then rounds; the result always fits 16 bits. */
static inline int16_t limit(double y) {
    double m = __builtin_fabs(y);
    /* !(m <= KNEE), not m > KNEE: the same for a number, but wazero fuses
     * f64.le with the branch around the arm, where f64.gt and i32.eqz cost
     * eight instructions a sample (RATIONALE.md, "The WebAssembly tax on
     * the stock DSP"); y is never NaN. */
    if (!(m <= KNEE)) {
        double u = (m - KNEE) / HEADROOM;
        double bent = KNEE + (HEADROOM * u) / (1.0 + u); /* < full scale for every finite u */
        y = y < 0 ? -bent : bent;
    }
    return (int16_t)stock_nearest(y);
}

/* One sample: its energy into the block's sum, the gain one step along its ramp. */
static inline int16_t agc_sample(int32_t x, uint64_t *a, double *g, double st) {
    *a += (uint64_t)(int64_t)(x * x);
    *g += st;
    return limit((double)x * *g);
}

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / VOX_SAMPLE_BYTES) return VOX_BAD_LENGTH;
    int16_t *s = vox_samples();
    int32_t i = 0;
    while (i < samples) {
        /* Up to the end of the block (or of the frame), with the state in locals. */
        int32_t m = block_len - pos;
        if (m > samples - i) m = samples - i;
        int32_t end = i + m;
        double st = step, g = gain;
        uint64_t a = acc;
        /* Four samples to a load and a store (stock_load4), then the rest. */
        for (; i + 4 <= end; i += 4) {
            uint64_t in = stock_load4(s + i);
            int16_t y0 = agc_sample(stock_lane(in, 0), &a, &g, st), y1 = agc_sample(stock_lane(in, 1), &a, &g, st),
                    y2 = agc_sample(stock_lane(in, 2), &a, &g, st), y3 = agc_sample(stock_lane(in, 3), &a, &g, st);
            stock_store4(s + i, stock_pack4(y0, y1, y2, y3));
        }
        for (; i < end; i++) s[i] = agc_sample(s[i], &a, &g, st);
        acc = a;
        gain = g;
        pos += m;
        if (pos == block_len) end_block();
    }
    return samples;
}
