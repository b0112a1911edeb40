/*
 * gate — a noise gate (README.md).
 *
 * A 5 ms RMS follower measures the level. The gate opens when the level
 * rises above threshold_dbfs, stays open while it is above threshold_dbfs -
 * hysteresis_db and for hold_ms after it falls below, then closes. Open, the
 * gain ramps linearly up to 1 over attack_ms; closed, it falls in dB at a
 * steady rate to floor_db over release_ms. The gain moves every sample, so
 * the output never jumps.
 *
 * The C port of the AssemblyScript plugin it replaced, operation for
 * operation (../c-stock/stock.h): the same output bits (RATIONALE.md).
 */
#include "voxhost.h"
#include "../../c-stock/stock.h"

/* Time constant of the level follower (mean square), ms. */
#define DETECT_MS 5.0

/* Configuration (defaults as in README.md). */
static double threshold_db = -45.0, hysteresis_db = 3.0, attack_ms = 2.0, hold_ms = 100.0, release_ms = 150.0,
              floor_db = -60.0;

/* Derived at vox_rate. */
static double open_ms;          /* mean square that opens the gate, samples^2 */
static double close_ms;         /* mean square under which the hold starts */
static double a_detect;
static double floor_gain;
static double attack_step;      /* linear gain added per sample while opening */
static double release_mul = 1;  /* factor per sample while closing */
static int32_t hold_samples;

/* State. */
static double env;              /* mean-square follower */
static int is_open;
static int32_t hold;            /* samples of hold left */
static double gain;

/* A duration in ms as a whole number of samples, at least 1. */
static double samples_of(double ms, int32_t rate) {
    double n = __builtin_floor((ms * (double)rate) / 1000.0 + 0.5);
    return n < 1.0 ? 1.0 : n;
}

static void setup(int32_t rate) {
    open_ms = stock_dbfs_to_mean_square(threshold_db);
    close_ms = stock_dbfs_to_mean_square(threshold_db - hysteresis_db);
    a_detect = 1.0 - stock_exp(-1000.0 / (DETECT_MS * (double)rate));
    floor_gain = stock_db_to_gain(floor_db);
    attack_step = (1.0 - floor_gain) / samples_of(attack_ms, rate);
    /* floor_db in release_ms: a steady fall in dB (an exponential decay). */
    release_mul = stock_exp((floor_db * (STOCK_LN10 / 20.0)) / samples_of(release_ms, rate));
    hold_samples = (int32_t)__builtin_floor((hold_ms * (double)rate) / 1000.0 + 0.5);
    env = 0;
    is_open = 0;
    hold = 0;
    gain = floor_gain; /* closed until there is something to let through */
}

VOX_INIT {
    double th, hy, att, hld, rel, fl;
    if (!stock_number(config_len, "threshold_dbfs", -45.0, -96.0, 0.0, "gate: threshold_dbfs must be a number from -96 to 0", &th) ||
        !stock_number(config_len, "hysteresis_db", 3.0, 0.0, 20.0, "gate: hysteresis_db must be a number from 0 to 20", &hy) ||
        !stock_number(config_len, "attack_ms", 2.0, 0.0, 1000.0, "gate: attack_ms must be a number from 0 to 1000", &att) ||
        !stock_number(config_len, "hold_ms", 100.0, 0.0, 10000.0, "gate: hold_ms must be a number from 0 to 10000", &hld) ||
        !stock_number(config_len, "release_ms", 150.0, 0.0, 10000.0, "gate: release_ms must be a number from 0 to 10000", &rel) ||
        !stock_number(config_len, "floor_db", -60.0, -96.0, 0.0, "gate: floor_db must be a number from -96 to 0", &fl))
        return VOX_BAD_CONFIG;
    threshold_db = th;
    hysteresis_db = hy;
    attack_ms = att;
    hold_ms = hld;
    release_ms = rel;
    floor_db = fl;
    setup(8000);
    return VOX_OK;
}

VOX_RATE {
    if (input_rate < 8000 || input_rate > 48000) return VOX_BAD_RATE;
    setup(input_rate);
    return input_rate;
}

/* The loop's state, in locals for the frame (gate_sample's callers copy
 * the globals in and back). */
struct gate_run {
    double a_d, o_ms, c_ms, up, down, fl;
    int32_t h_n;
    double e, g;
    int o;
    int32_t h;
};

/* One sample through the gate. The tests are written !(a <= b) for a > b
 * (and so on): the same for the numbers here, none of which is NaN, but
 * the branch around their arm is then an f64.le that wazero fuses with its
 * jump, where f64.gt and i32.eqz cost it eight instructions (RATIONALE.md,
 * "The WebAssembly tax on the stock DSP"). */
static inline int16_t gate_sample(struct gate_run *r, int16_t in) {
    double x = (double)in;
    r->e += (x * x - r->e) * r->a_d;
    if (!(r->e <= (r->o ? r->c_ms : r->o_ms))) {
        r->o = 1;
        r->h = r->h_n;
    } else if (r->h > 0) {
        r->h--;
    } else {
        r->o = 0;
    }
    if (r->o) {
        if (!(r->g >= 1.0)) {
            r->g += r->up;
            if (!(r->g <= 1.0)) r->g = 1.0;
        }
    } else if (!(r->g <= r->fl)) {
        r->g *= r->down;
        if (!(r->g >= r->fl)) r->g = r->fl;
    }
    /* |x g| <= |x|: no saturation needed. At g = 1 the sample is unchanged. */
    return (int16_t)stock_nearest(x * r->g);
}

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / VOX_SAMPLE_BYTES) return VOX_BAD_LENGTH;
    int16_t *s = vox_samples();
    /* Locals, not globals, in the loop: the state is written back at the end. */
    struct gate_run r = {a_detect, open_ms, close_ms, attack_step, release_mul, floor_gain, hold_samples,
                         env, gain, is_open, hold};
    int32_t i = 0;
    for (; i + 4 <= samples; i += 4) {
        uint64_t in = stock_load4(s + i);
        int16_t y0 = gate_sample(&r, stock_lane(in, 0)), y1 = gate_sample(&r, stock_lane(in, 1)),
                y2 = gate_sample(&r, stock_lane(in, 2)), y3 = gate_sample(&r, stock_lane(in, 3));
        stock_store4(s + i, stock_pack4(y0, y1, y2, y3));
    }
    for (; i < samples; i++) s[i] = gate_sample(&r, s[i]);
    env = r.e;
    gain = r.g;
    is_open = r.o;
    hold = r.h;
    return samples;
}
