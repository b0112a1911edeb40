//go:build ignore

/*
 * (The go:build line above keeps the go tool from taking this file for cgo
 * source of the Go tests beside it; clang reads it as a comment.)
 *
 * resample — converts between sample rates in integer ratios: up by 2, 3, 4
 * or 6 (8 kHz to 16, 24, 32 or 48 kHz) and down by the same factors.
 * Config: {"to": 16000}, the output rate in Hz (required); the input rate
 * is the one the host announces through vox_rate. A ratio other than
 * 1, 2, 3, 4 or 6 either way is refused with VOX_BAD_RATE (-3).
 *
 * Filter: one linear-phase low-pass FIR per ratio R, a Kaiser-windowed sinc
 * (beta 6.5) of N = 56 R + 1 taps at the higher rate, cut off half-way
 * between 85% and 100% of the lower rate's Nyquist frequency (3.4 and 4 kHz
 * for 8 kHz), so the pass band is flat to 3.4 kHz (ripple 0.004 dB) and the
 * stop band, from 4 kHz, is 67 dB down. Coefficients are computed once, in
 * double, and kept in Q20 fixed point; the products add up in 64 bits, so
 * the output is bit-exact on every host.
 *
 *   up by L:   polyphase, 57 taps per output sample: phase p of input
 *              sample i is  y[L i + p] = sum_k x[i - k] h[L k + p], all L
 *              phases in one pass over the history.
 *   down by M: the full filter, evaluated at every M-th input sample only,
 *              folded by its symmetry (28 M + 1 multiplies per output).
 *
 * The last N-1 (down) or 56 (up) input samples are kept across frames, so
 * the output does not depend on where frames start: frame-by-frame output is
 * identical to processing the whole input at once. Group delay: 28 samples
 * at the lower rate (3.5 ms from or to 8 kHz), 28 R at the higher rate.
 * Frames of any length work; downsampling a frame whose length is not a
 * multiple of M carries the phase over to the next frame.
 *
 * Events: clear (barge-in) resets the history; flush pushes 28 low-rate
 * samples' worth of silence through the filter and returns the tail it
 * still held (the last 3.5 ms of audio).
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

#define RS_PI 3.14159265358979323846
#define TAPS_PER_PHASE 57           /* K: odd, so the delay is a whole number of low-rate samples */
#define DELAY ((TAPS_PER_PHASE - 1) / 2)   /* group delay in low-rate samples */
#define MAX_RATIO 6
#define MAX_TAPS (MAX_RATIO * (TAPS_PER_PHASE - 1) + 1)
#define Q 20
#define KAISER_BETA 6.5
#define MAX_IN (VOX_BUFFER_BYTES / 2)
/* Keeps clang from turning the copy loops into calls to memcpy and memset,
 * which a freestanding module does not have. */
#define NO_LIBC __attribute__((no_builtin))

/* sin(x) for any x: reduction to [-pi/2, pi/2], then Taylor to x^23. */
static double rs_sin(double x) {
    double k = __builtin_floor(x / (2 * RS_PI) + 0.5);
    x -= k * (2 * RS_PI);
    if (x > RS_PI / 2) x = RS_PI - x;
    else if (x < -RS_PI / 2) x = -RS_PI - x;
    double x2 = x * x, term = x, sum = x;
    for (int n = 1; n < 12; n++) {
        term *= -x2 / (double)((2 * n) * (2 * n + 1));
        sum += term;
    }
    return sum;
}

/* The modified Bessel function of the first kind, order 0 (power series). */
static double rs_i0(double x) {
    double term = 1, sum = 1, h = x / 2;
    for (int k = 1; k < 60; k++) {
        term *= h / k;
        sum += term * term;
    }
    return sum;
}

static int32_t to_rate;
static int32_t up = 1, down = 1;       /* exactly one of them is > 1, or both 1 */
static int32_t taps, hist_len;         /* filter length; input samples kept */
/* up: coef[j L + p] = L h[L (K-1-j) + p], reversed so that the phases walk
 * the history forwards, and interleaved so that one pass over the history
 * serves every phase; down: coef[j] = h[j] for j <= (N-1)/2 (the filter is
 * symmetric, so the sum folds: h[j] (x[j] + x[N-1-j])). */
static int32_t coef[MAX_TAPS + MAX_RATIO];
static int16_t work[MAX_TAPS - 1 + MAX_IN];   /* history, then the frame's input */
static int32_t phase;                  /* down: index in the next frame of the next output's input sample */

VOX_INIT {
    double to = 0;
    if (!vox_config_number(vox_bytes(), config_len, "to", &to)) {
        vox_log(VOX_LOG_ERROR, "resample: \"to\", the output rate in Hz, is required (a number)");
        return VOX_BAD_CONFIG;
    }
    if (!(to >= 1000 && to <= 384000) || to != __builtin_floor(to)) {
        vox_log(VOX_LOG_ERROR, "resample: \"to\" must be a whole number of Hz from 1000 to 384000");
        return VOX_BAD_CONFIG;
    }
    to_rate = (int32_t)to;
    return VOX_OK;
}

static int ratio_ok(int32_t r) { return r == 1 || r == 2 || r == 3 || r == 4 || r == 6; }

/* Designs the low-pass of ratio r = max(up, down) and lays it out. */
static void design(void) {
    int32_t r = up > down ? up : down;
    double h[MAX_TAPS];
    double c = (taps - 1) / 2.0, fc = 0.4625 / r; /* (0.85 + 1) / 2 of the low Nyquist, in cycles per high-rate sample */
    double sum = 0, i0beta = rs_i0(KAISER_BETA);
    for (int32_t n = 0; n < taps; n++) {
        if (n > (taps - 1) / 2) {          /* exactly symmetric */
            h[n] = h[taps - 1 - n];
        } else {
            double x = n - c, t = x / c;
            double s = x == 0 ? 2 * fc : rs_sin(2 * RS_PI * fc * x) / (RS_PI * x);
            h[n] = s * rs_i0(KAISER_BETA * __builtin_sqrt(1 - t * t)) / i0beta;
        }
        sum += h[n];
    }
    if (up > 1) {
        /* Each phase gets unit DC gain (the filter's gain L, split over L
         * phases), rounded to Q20 with the rounding error put on its
         * largest tap, so a constant input comes out exactly constant. */
        for (int32_t p = 0; p < up; p++) {
            int64_t total = 0;
            int32_t big = 0;
            for (int32_t j = 0; j < TAPS_PER_PHASE; j++) {
                int32_t n = up * (TAPS_PER_PHASE - 1 - j) + p;
                double v = n < taps ? h[n] * up / sum : 0;
                int32_t q = (int32_t)__builtin_floor(v * (1 << Q) + 0.5);
                coef[j * up + p] = q;
                total += q;
                if (q > coef[big * up + p]) big = j;
            }
            coef[big * up + p] += (int32_t)((1 << Q) - total);
        }
    } else {
        /* Symmetric: the first half and the centre tap, rounded to Q20,
         * the rounding error put on the centre tap (unit DC gain). */
        int64_t total = 0;
        int32_t mid = (taps - 1) / 2;
        for (int32_t j = 0; j <= mid; j++) {
            coef[j] = (int32_t)__builtin_floor(h[j] / sum * (1 << Q) + 0.5);
            total += j == mid ? coef[j] : 2 * (int64_t)coef[j];
        }
        coef[mid] += (int32_t)((1 << Q) - total);
    }
}

NO_LIBC static void reset(void) {
    for (int32_t i = 0; i < hist_len; i++) work[i] = 0;
    phase = 0;
}

VOX_RATE {
    if (input_rate <= 0) return VOX_BAD_RATE;
    up = down = 1;
    if (to_rate % input_rate == 0 && ratio_ok(to_rate / input_rate)) {
        up = to_rate / input_rate;
    } else if (input_rate % to_rate == 0 && ratio_ok(input_rate / to_rate)) {
        down = input_rate / to_rate;
    } else {
        vox_log(VOX_LOG_ERROR, "resample: the ratio of \"to\" and the input rate must be 1, 2, 3, 4 or 6 either way");
        return VOX_BAD_RATE;
    }
    int32_t r = up > down ? up : down;
    taps = r * (TAPS_PER_PHASE - 1) + 1;
    hist_len = up > 1 ? TAPS_PER_PHASE - 1 : taps - 1;
    if (r > 1) design();
    reset();
    return to_rate;
}

static inline int16_t round_q(int64_t acc) {
    acc = (acc + (1 << (Q - 1))) >> Q;
    return (int16_t)(acc > 32767 ? 32767 : acc < -32768 ? -32768 : acc);
}

/* Upsamples by the constant L (inlined, so the L sums stay in registers):
 * y[L i + p] = sum_j x[i - K + 1 + j] coef[j L + p]. */
static inline __attribute__((always_inline)) int32_t up_by(const int32_t L, int16_t *s, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        const int16_t *x = work + i;       /* x[0..K) = input i-K+1 .. i */
        int64_t acc[MAX_RATIO] = {0};
        for (int32_t j = 0; j < TAPS_PER_PHASE; j++) {
            int64_t v = x[j];
            for (int32_t p = 0; p < L; p++) acc[p] += v * coef[j * L + p];
        }
        for (int32_t p = 0; p < L; p++) s[L * i + p] = round_q(acc[p]);
    }
    return L * n;
}

/* Resamples the n samples at the start of the buffer in place. */
NO_LIBC static int32_t resample(int32_t n) {
    int16_t *s = vox_samples();
    int16_t *in = work + hist_len;
    int32_t out = 0;
    for (int32_t i = 0; i < n; i++) in[i] = s[i];
    switch (up) {
    case 2: out = up_by(2, s, n); break;
    case 3: out = up_by(3, s, n); break;
    case 4: out = up_by(4, s, n); break;
    case 6: out = up_by(6, s, n); break;
    default: {
        int32_t t = phase, mid = (taps - 1) / 2;
        for (; t < n; t += down) {
            const int16_t *x = work + t;   /* x[0..N) = input t-N+1 .. t */
            int64_t acc = (int64_t)x[mid] * coef[mid];
            for (int32_t j = 0; j < mid; j++) acc += (int64_t)(x[j] + x[taps - 1 - j]) * coef[j];
            s[out++] = round_q(acc);
        }
        phase = t - n;
    }
    }
    /* Keep the last hist_len input samples. */
    for (int32_t i = 0; i < hist_len; i++) work[i] = work[n + i];
    return out;
}

VOX_PROCESS {
    if (up == 1 && down == 1) return samples;
    if (samples > MAX_IN || (int64_t)samples * up > MAX_IN) return VOX_BAD_LENGTH;
    return resample(samples);
}

NO_LIBC VOX_EVENT {
    (void)arg;
    if (kind == VOX_EVENT_CLEAR) reset();
    if (kind == VOX_EVENT_FLUSH && (up > 1 || down > 1)) {
        /* Silence for the group delay pushes out what the filter holds. */
        int32_t n = DELAY * down;
        int16_t *s = vox_samples();
        for (int32_t i = 0; i < n; i++) s[i] = 0;
        int32_t out = resample(n);
        reset();
        return out;
    }
    return VOX_OK;
}
