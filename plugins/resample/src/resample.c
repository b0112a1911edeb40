/*
 * resample — converts between sample rates in the ratios L/M with L and M
 * among 1, 2, 3, 4 and 6 after reduction: 8 kHz to and from 16, 24, 32 and
 * 48 kHz, 16 to and from 24, 32 and 48, 24 to and from 32 and 48, and so on.
 * Config: {"to": 16000}, the output rate in Hz (required); the input rate
 * is the one the host announces through vox_rate. Any other ratio is
 * refused with VOX_BAD_RATE (-3).
 *
 * Filter: one linear-phase low-pass FIR, a Kaiser-windowed sinc (beta for
 * 110 dB) of N = 2 D R + 1 taps at the interpolated rate F = L fin = M fout,
 * where R = F / min(fin, fout): the pass band is flat to 87.5% of the lower
 * rate's Nyquist frequency (3.5 kHz for 8 kHz, 7 kHz for 16 kHz, ripple
 * below 0.001 dB) and the stop band starts at that Nyquist frequency, so
 * every image and alias is 100 dB down or more (resample_test.go measures
 * it, beside libsoxr's). D = 57 samples at the lower rate is the group delay.
 *
 * Arithmetic: single-precision floats, in the order the code writes them
 * (eight partial sums in two vectors of four lanes, see dot), then
 * rounded to the nearest 16-bit integer, half to even, and saturated. A
 * WebAssembly f32 operation has one IEEE result, so the output is bit-exact
 * on every host; the rounding of the products adds noise near -140 dB, far
 * below the 16-bit output's own. The coefficients are computed once, in
 * double, each polyphase branch scaled to unit DC gain.
 *
 * Polyphase: output m lies at t = m M on the F grid, between input samples
 * j = t / L and j + 1; it is the dot product of the K = ceil(N / L) inputs
 * up to j with branch p = t mod L of the filter (reversed, padded to a
 * multiple of eight with leading zeros). So a ratio of 6 up costs 120
 * products per output, 6 down 688.
 *
 * The last K-1 input samples and the position t carry over across frames,
 * so the output does not depend on where frames start: frame-by-frame output
 * is identical to processing the whole input at once.
 *
 * Events: clear (barge-in) resets the history; flush pushes D samples' worth
 * of silence at the lower rate through the filter and returns the tail it
 * still held (the last 7.1 ms of audio at 8 kHz).
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

#define RS_PI 3.14159265358979323846
#define DELAY 57                         /* D: group delay in lower-rate samples */
#define MAX_RATIO 6
#define MAX_TAPS (2 * DELAY * MAX_RATIO + 1)
#define MAX_K ((MAX_TAPS + 7) / 8 * 8)   /* taps per branch, padded, at most */
#define ATTENUATION 110.0                /* dB, the Kaiser design's stop band */
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
    for (int k = 1; k < 80; k++) {
        term *= h / k;
        sum += term * term;
    }
    return sum;
}

static int32_t to_rate;
static int32_t up = 1, down = 1;       /* L and M, coprime */
static int32_t k_taps;                 /* K, padded: taps per branch */
static int32_t hist_len;               /* K - 1 input samples kept */
/* Branch p at coef[p K .. p K + K): coef[p K + i] = L h[p + (K - 1 - i) L],
 * so that the branch walks the history forwards. */
static float coef[MAX_TAPS + 8 * MAX_RATIO] __attribute__((aligned(16))); /* L K <= N + 8 L */
static float work[MAX_K - 1 + MAX_IN]; /* history, then the frame's input */
static int32_t position;               /* t of the next output, relative to the frame's first input */
static double taps_d[MAX_TAPS];

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

static int factor_ok(int32_t r) { return r == 1 || r == 2 || r == 3 || r == 4 || r == 6; }

static int32_t gcd(int32_t a, int32_t b) {
    while (b) {
        int32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Designs the low-pass for L and M and lays out its branches. */
static void design(void) {
    int32_t r = up > down ? up : down; /* F / the lower rate */
    int32_t n_taps = 2 * DELAY * r + 1;
    double c = DELAY * r;
    /* Cut-off half-way between 87.5% and 100% of the lower Nyquist, in
     * cycles per F sample. */
    double fc = (0.875 + 1) / 2 / (2.0 * r);
    double beta = 0.1102 * (ATTENUATION - 8.7), i0beta = rs_i0(beta);
    for (int32_t n = 0; n < n_taps; n++) {
        if (n > DELAY * r) { /* exactly symmetric */
            taps_d[n] = taps_d[n_taps - 1 - n];
            continue;
        }
        double x = n - c, t = x / c;
        double s = x == 0 ? 2 * fc : rs_sin(2 * RS_PI * fc * x) / (RS_PI * x);
        taps_d[n] = s * rs_i0(beta * __builtin_sqrt(1 - t * t)) / i0beta;
    }
    int32_t k = (n_taps + up - 1) / up;
    k_taps = (k + 7) / 8 * 8;
    for (int32_t p = 0; p < up; p++) {
        double sum = 0;
        for (int32_t j = 0; j < k; j++) {
            int32_t n = p + j * up;
            if (n < n_taps) sum += taps_d[n];
        }
        for (int32_t i = 0; i < k_taps; i++) {
            int32_t j = k_taps - 1 - i, n = p + j * up;
            coef[p * k_taps + i] = j < k && n < n_taps ? (float)(taps_d[n] / sum) : 0.0f;
        }
    }
}

NO_LIBC static void reset(void) {
    for (int32_t i = 0; i < hist_len; i++) work[i] = 0;
    position = 0;
}

VOX_RATE {
    if (input_rate <= 0) return VOX_BAD_RATE;
    int32_t g = gcd(to_rate, input_rate);
    up = to_rate / g;
    down = input_rate / g;
    if (!factor_ok(up) || !factor_ok(down)) {
        up = down = 1;
        vox_log(VOX_LOG_ERROR, "resample: the ratio of \"to\" and the input rate must be L/M with L and M among 1, 2, 3, 4 and 6");
        return VOX_BAD_RATE;
    }
    if (up > 1 || down > 1) design();
    hist_len = up > 1 || down > 1 ? k_taps - 1 : 0;
    reset();
    return to_rate;
}

static inline int16_t to_sample(float y) {
    y = y > 32767.0f ? 32767.0f : y < -32768.0f ? -32768.0f : y;
    return (int16_t)__builtin_rintf(y);
}

/* Four float lanes: WebAssembly's f32x4 (SSE natively); the unaligned one
 * reads the history at any sample. */
typedef float f32x4 __attribute__((vector_size(16)));
typedef float f32x4_unaligned __attribute__((vector_size(16), aligned(4)));

/* The dot product of k (a multiple of 8) samples with a branch: two sums of
 * four lanes (two, so that one addition need not wait for the other),
 * added lane by lane, then pairwise. */
static inline float total(f32x4 a, f32x4 b) {
    a += b;
    return (a[0] + a[2]) + (a[1] + a[3]);
}

static inline float dot(const float *x, const float *h, int32_t k) {
    f32x4 a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
    for (int32_t i = 0; i < k; i += 8) {
        a += *(const f32x4_unaligned *)(x + i) * *(const f32x4 *)(h + i);
        b += *(const f32x4_unaligned *)(x + i + 4) * *(const f32x4 *)(h + i + 4);
    }
    return total(a, b);
}

/* Upsampling by the constant L (inlined, so that the 2 L sums stay in
 * registers): the L outputs of input sample j share its window, so each
 * load of the history serves L products, where dot would load it L times
 * (a WebAssembly load is checked against the memory's bounds). Each output
 * adds the same products in the same order as dot, so the bits are its. */
static inline __attribute__((always_inline)) void up_by(const int32_t L, int16_t *s, int32_t n) {
    for (int32_t j = 0; j < n; j++) {
        const float *x = work + j;
        f32x4 a[MAX_RATIO], b[MAX_RATIO];
        for (int32_t p = 0; p < L; p++) a[p] = b[p] = (f32x4){0, 0, 0, 0};
        for (int32_t i = 0; i < k_taps; i += 8) {
            f32x4 x0 = *(const f32x4_unaligned *)(x + i), x1 = *(const f32x4_unaligned *)(x + i + 4);
            for (int32_t p = 0; p < L; p++) {
                a[p] += x0 * *(const f32x4 *)(coef + p * k_taps + i);
                b[p] += x1 * *(const f32x4 *)(coef + p * k_taps + i + 4);
            }
        }
        for (int32_t p = 0; p < L; p++) s[L * j + p] = to_sample(total(a[p], b[p]));
    }
}


/* Resamples the n samples at the start of the buffer in place. */
NO_LIBC static int32_t resample(int32_t n) {
    int16_t *s = vox_samples();
    float *in = work + hist_len;
    for (int32_t i = 0; i < n; i++) in[i] = (float)s[i];
    int32_t out = 0, t = position, end = n * up;
    if (down == 1) { /* up by L, position always 0 */
        switch (up) {
        case 2: up_by(2, s, n); break;
        case 3: up_by(3, s, n); break;
        case 4: up_by(4, s, n); break;
        case 6: up_by(6, s, n); break;
        }
        out = t = end;
    }
    for (; t < end; t += down) {
        int32_t j = t / up, p = t - j * up;
        s[out++] = to_sample(dot(work + j, coef + p * k_taps, k_taps));
    }
    position = t - end;
    /* Keep the last hist_len input samples. */
    for (int32_t i = 0; i < hist_len; i++) work[i] = work[n + i];
    return out;
}

VOX_PROCESS {
    if (up == 1 && down == 1) return samples;
    if (samples > MAX_IN || ((int64_t)samples * up + down - 1) / down > MAX_IN) return VOX_BAD_LENGTH;
    return resample(samples);
}

NO_LIBC VOX_EVENT {
    (void)arg;
    if (kind == VOX_EVENT_CLEAR) reset();
    if (kind == VOX_EVENT_FLUSH && (up > 1 || down > 1)) {
        /* Silence for the group delay pushes out what the filter holds:
         * D lower-rate samples are D R / L input samples, rounded up. */
        int32_t n = (DELAY * (up > down ? up : down) + up - 1) / up;
        int16_t *s = vox_samples();
        for (int32_t i = 0; i < n; i++) s[i] = 0;
        int32_t out = resample(n);
        reset();
        return out;
    }
    return VOX_OK;
}
