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

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / VOX_SAMPLE_BYTES) return VOX_BAD_LENGTH;
    int16_t *s = vox_samples();
    /* Locals, not globals, in the loop: the state is written back at the end. */
    const double a_d = a_detect, o_ms = open_ms, c_ms = close_ms, up = attack_step, down = release_mul,
                 fl = floor_gain;
    const int32_t h_n = hold_samples;
    double e = env, g = gain;
    int o = is_open;
    int32_t h = hold;
    for (int32_t i = 0; i < samples; i++) {
        double x = (double)s[i];
        e += (x * x - e) * a_d;
        if (e > (o ? c_ms : o_ms)) {
            o = 1;
            h = h_n;
        } else if (h > 0) {
            h--;
        } else {
            o = 0;
        }
        if (o) {
            if (g < 1.0) {
                g += up;
                if (g > 1.0) g = 1.0;
            }
        } else if (g > fl) {
            g *= down;
            if (g < fl) g = fl;
        }
        /* |x g| <= |x|: no saturation needed. At g = 1 the sample is unchanged. */
        s[i] = (int16_t)stock_nearest(x * g);
    }
    env = e;
    gain = g;
    is_open = o;
    hold = h;
    return samples;
}
