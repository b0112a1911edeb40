/*
 * vad — voice activity detection for telephony audio. Audio passes through
 * unchanged; the plugin emits "speech_start" and "speech_end" events whose
 * data is {"t_ms":N}, N the audio time of the boundary counted from the
 * samples the plugin has seen.
 *
 * Config: {"sensitivity": 0.5, "min_speech_ms": 100, "min_silence_ms": 300,
 *          "barge_in": false}
 *   sensitivity     0..1, higher detects quieter speech (default 0.5)
 *   min_speech_ms   speech shorter than this is ignored (default 100)
 *   min_silence_ms  hangover: silence this long ends speech (default 300)
 *   barge_in        true: emit "clear" (no data) right after each
 *                   speech_start, so that the host empties the playout
 *                   queue when the caller talks over the bot (default false)
 *
 * Algorithm (README.md has the details):
 *   1. Three sub-bands, 300-1000, 1000-2000 and 2000-3400 Hz, each a
 *      Butterworth high-pass biquad followed by a Butterworth low-pass one.
 *   2. Mean energy of each band over 10 ms blocks, averaged over the last
 *      four (40 ms), in dBFS.
 *   3. An adaptive noise floor per band, in dB: fast down (30% of the way
 *      to a block more than 3 dB below it), slow up (at most 3 dB/s, 0.5 dB/s
 *      in speech), a slow average in between so that it sits at the median
 *      of steady noise, and a minimum-statistics guard (the minimum of the
 *      last 3 s, plus its 2 dB bias) that lifts it at once after the noise itself
 *      got louder.
 *   4. The block's score: the mean of the bands' power ratios over their
 *      floors, weighted 2:1:1 towards the 300-1000 Hz band, in dB (a
 *      weighted SNR: 0 dB in noise, about the strongest band's SNR minus
 *      3 dB in voiced speech).
 *      A block is speech when the score reaches the threshold the
 *      sensitivity sets (4.5 dB at 0, 3 dB at 0.5, 1.5 dB at 1), or, once a
 *      start is pending or confirmed, a third of it (hysteresis). Speech
 *      more than 18 dB below the caller's recent speech level is a
 *      background talker's: it confirms no start, and 500 ms of it alone
 *      ends speech.
 *   5. A state machine: speech that lasts min_speech_ms from its first
 *      speech block to its last (gaps of up to 30 ms tolerated) confirms
 *      speech_start, dated at the start of the first speech block;
 *      min_silence_ms of non-speech blocks end it, and speech_end is dated
 *      at the end of the last speech block.
 *
 * Everything is computed in IEEE double/float arithmetic, which WebAssembly
 * defines exactly, so the events are the same on every host.
 */
/* The SDK's implementation part (the frame buffer) is src/sdk.c, linked
 * after this unit so that the buffer lies after the detector's state. */
#include "voxhost.h"

/* ---- libm-free helpers ---- */

#define VAD_PI 3.14159265358979323846

/* sin(x) for any x: reduction to [-pi/2, pi/2], then Taylor to x^23. */
static double vad_sin(double x) {
    double k = __builtin_floor(x / (2 * VAD_PI) + 0.5);
    x -= k * (2 * VAD_PI);
    if (x > VAD_PI / 2) x = VAD_PI - x;
    else if (x < -VAD_PI / 2) x = -VAD_PI - x;
    double x2 = x * x, term = x, sum = x;
    for (int n = 1; n < 12; n++) {
        term *= -x2 / (double)((2 * n) * (2 * n + 1));
        sum += term;
    }
    return sum;
}

static double vad_cos(double x) { return vad_sin(x + VAD_PI / 2); }

static inline double min_d(double a, double b) { return a < b ? a : b; }

/* 10*log10(x) for x > 0: x = m * 2^e with m in [1,2), ln m = 2 atanh((m-1)/(m+1)). */
static double vad_db(double x) {
    union { double d; uint64_t u; } v;
    v.d = x;
    int e = (int)((v.u >> 52) & 0x7ff) - 1023;
    v.u = (v.u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    double m = v.d, t = (m - 1) / (m + 1), t2 = t * t, term = t, sum = t;
    for (int n = 3; n < 24; n += 2) {
        term *= t2;
        sum += term / n;
    }
    /* 10/ln(10) * (e ln 2 + ln m) */
    return 4.3429448190325182765 * (e * 0.69314718055994530942 + 2 * sum);
}

/* ---- configuration and design ---- */

#define BANDS 3
static const double band_lo[BANDS] = {300, 1000, 2000};
static const double band_hi[BANDS] = {1000, 2000, 3400};
static const double band_weight[BANDS] = {2, 1, 1};

static double sensitivity = 0.5;
static int32_t min_speech_ms = 100, min_silence_ms = 300;
static int barge_in = 0;

static double thr_on, thr_off;         /* score thresholds, dB */
static int32_t min_speech_blocks, hangover_blocks;
#define THR_BASE 4.5               /* onset threshold at sensitivity 0, dB */
#define THR_SLOPE 3.0              /* dB less per unit of sensitivity */
#define HYSTERESIS 0.34            /* the threshold once a start is pending or confirmed: this share of the onset's */
#define MINSTAT_BIAS 2.0           /* how far the 3 s minimum of a 40 ms level lies below steady noise's median, dB */
static int32_t rate = 8000, block_len = 80;

/* A biquad in transposed direct form II; a0 normalised to 1. */
typedef struct { float b0, b1, b2, a1, a2, z1, z2; } biquad;
static biquad hp[BANDS], lp[BANDS];

/* RBJ cookbook Butterworth (Q = 1/sqrt 2) high- or low-pass at f Hz. */
static void design(biquad *q, double f, int high) {
    double w = 2 * VAD_PI * f / rate, c = vad_cos(w), alpha = vad_sin(w) / (2 * 0.70710678118654752440);
    double a0 = 1 + alpha;
    double b0 = high ? (1 + c) / 2 : (1 - c) / 2, b1 = high ? -(1 + c) : 1 - c;
    q->b0 = (float)(b0 / a0);
    q->b1 = (float)(b1 / a0);
    q->b2 = (float)(b0 / a0);
    q->a1 = (float)(-2 * c / a0);
    q->a2 = (float)((1 - alpha) / a0);
    q->z1 = q->z2 = 0;
}


/* Reads an optional number member into *out; 0 if present but not a number in [lo, hi]. */
static int read_number(int32_t len, const char *key, double lo, double hi, double *out) {
    double v;
    if (vox_config_find(vox_bytes(), len, key) < 0) return 1;
    if (!vox_config_number(vox_bytes(), len, key, &v) || !(v >= lo && v <= hi)) return 0;
    *out = v;
    return 1;
}

VOX_INIT {
    double s = 0.5, speech = 100, silence = 300;
    int barge = 0;
    if (!read_number(config_len, "sensitivity", 0, 1, &s)) {
        vox_log(VOX_LOG_ERROR, "vad: \"sensitivity\" must be a number from 0 to 1");
        return VOX_BAD_CONFIG;
    }
    if (!read_number(config_len, "min_speech_ms", 0, 10000, &speech)) {
        vox_log(VOX_LOG_ERROR, "vad: \"min_speech_ms\" must be a number from 0 to 10000");
        return VOX_BAD_CONFIG;
    }
    if (!read_number(config_len, "min_silence_ms", 0, 10000, &silence)) {
        vox_log(VOX_LOG_ERROR, "vad: \"min_silence_ms\" must be a number from 0 to 10000");
        return VOX_BAD_CONFIG;
    }
    if (vox_config_find(vox_bytes(), config_len, "barge_in") >= 0 &&
        !vox_config_bool(vox_bytes(), config_len, "barge_in", &barge)) {
        vox_log(VOX_LOG_ERROR, "vad: \"barge_in\" must be true or false");
        return VOX_BAD_CONFIG;
    }
    sensitivity = s;
    min_speech_ms = (int32_t)(speech + 0.5);
    min_silence_ms = (int32_t)(silence + 0.5);
    barge_in = barge;
    return VOX_OK;
}

/* ---- detector state ---- */

#define FLOOR_DB_MIN (-100.0)      /* digital silence reads as -100 dBFS */
#define STARTUP_BLOCKS 20          /* the first 200 ms: the floor follows the level */
#define MINSTAT_SPAN 50            /* blocks per minimum-statistics sub-window (0.5 s) */
#define MINSTAT_WINDOWS 6          /* sub-windows: the guard looks 3 s back */
#define MAX_GAP_BLOCKS 3           /* non-speech blocks a pending start survives */
#define SMOOTH_BLOCKS 4            /* the score's window: the last 40 ms */
#define FAR_DB 18.0                /* a block this far below the caller's speech is background */
#define PEAK_DECAY_DB 0.01         /* per block: the caller's reference level falls 1 dB/s */

enum { SILENT, PENDING, SPEECH };

static float band_energy[BANDS];   /* sum of squares in the current block */
static double band_recent[SMOOTH_BLOCKS][BANDS]; /* mean squares of the last blocks */
static double peak_db = -200;      /* the caller's recent speech level (weighted, dBFS) */
static int32_t block_fill;         /* samples in the current block */
static int64_t samples_seen;       /* samples before the current block's first */
static int64_t blocks_seen;
static double floor_db[BANDS];
static double minstat[BANDS][MINSTAT_WINDOWS], minstat_cur[BANDS];
static int32_t minstat_count, minstat_filled;

static int state = SILENT;
static int64_t start_sample, last_speech_end;
static int32_t gap_blocks;
static int32_t near_blocks;        /* near speech blocks of a pending start */
static int64_t last_near_end;      /* end of the last near speech block */
static int32_t far_blocks;         /* speech blocks since the last near one */
#define FAR_HANG_BLOCKS 50         /* background speech this long ends the caller's */
#define NEAR_NEEDED 1              /* near blocks that confirm a start */
#define FAR_LEAD_BLOCKS 8          /* far blocks that may lead a start and still date it */

/* The call starts at vox_rate, with the detector's state as it begins: a
 * no-op in a fresh instance, and what lets the build internal/nativeplugin
 * compiles for the host (its globals live as long as the process) start a
 * call again. No memset in a freestanding module: hence no_builtin. */
__attribute__((no_builtin)) static void start(void) {
    for (int b = 0; b < BANDS; b++) {
        band_energy[b] = 0;
        floor_db[b] = 0;
        minstat_cur[b] = 0;
        for (int k = 0; k < SMOOTH_BLOCKS; k++) band_recent[k][b] = 0;
        for (int w = 0; w < MINSTAT_WINDOWS; w++) minstat[b][w] = 0;
    }
    peak_db = -200;
    block_fill = 0;
    samples_seen = blocks_seen = 0;
    minstat_count = minstat_filled = 0;
    state = SILENT;
    start_sample = last_speech_end = last_near_end = 0;
    gap_blocks = near_blocks = far_blocks = 0;
}

VOX_RATE {
    if (input_rate < 8000 || input_rate > 48000 || input_rate % 100 != 0) {
        vox_log(VOX_LOG_ERROR, "vad: the input rate must be a multiple of 100 Hz from 8000 to 48000 Hz");
        return VOX_BAD_RATE;
    }
    start();
    rate = input_rate;
    block_len = rate / 100;
    for (int b = 0; b < BANDS; b++) {
        design(&hp[b], band_lo[b], 1);
        design(&lp[b], band_hi[b], 0);
    }
    thr_on = THR_BASE - THR_SLOPE * sensitivity;
    thr_off = thr_on * HYSTERESIS;
    min_speech_blocks = (min_speech_ms + 5) / 10;
    if (min_speech_blocks < 1) min_speech_blocks = 1;
    hangover_blocks = (min_silence_ms + 5) / 10;
    if (hangover_blocks < 1) hangover_blocks = 1;
    return rate;
}

/* Emits name with {"t_ms":N}, N the sample index converted to ms (rounded). */
static void emit_at(const char *name, int64_t sample) {
    int64_t ms = (sample * 1000 + rate / 2) / rate;
    char data[40] = "{\"t_ms\":", digits[24];
    int n = 0, i = 8;
    do { digits[n++] = (char)('0' + ms % 10); ms /= 10; } while (ms > 0);
    while (n > 0) data[i++] = digits[--n];
    data[i++] = '}';
    data[i] = 0;
    vox_emit(name, data);
}

static void end_block(void) {
    int64_t block_start = samples_seen, block_end = samples_seen + block_len;
    double level[BANDS], score = 0, weights = 0, total = 0;
    int slot = (int)(blocks_seen % SMOOTH_BLOCKS);
    for (int b = 0; b < BANDS; b++) {
        band_recent[slot][b] = (double)band_energy[b] / block_len / (32768.0 * 32768.0);
        /* The first block fills the whole window: the call starts from its
         * own level, not from silence. */
        if (blocks_seen == 0)
            for (int k = 1; k < SMOOTH_BLOCKS; k++) band_recent[k][b] = band_recent[0][b];
        double ms = 0;
        for (int k = 0; k < SMOOTH_BLOCKS; k++) ms += band_recent[k][b];
        ms /= SMOOTH_BLOCKS;
        total += band_weight[b] * ms;
        level[b] = ms > 1e-10 ? vad_db(ms) : FLOOR_DB_MIN;
        if (blocks_seen == 0) floor_db[b] = level[b];
        score += band_weight[b] * vox_exp((level[b] - floor_db[b]) * 0.23025850929940456840); /* 10^(snr/10) */
        weights += band_weight[b];
        band_energy[b] = 0;
    }
    score = vad_db(score / weights);
    double total_db = total > 1e-10 ? vad_db(total / weights) : FLOOR_DB_MIN;
    int speech = score >= (state == SILENT ? thr_on : thr_off);
    /* Background talkers: speech far below the caller's recent speech is
     * not the caller's. It bridges a quiet tail like any speech, but
     * confirms no start, and FAR_HANG_BLOCKS of nothing nearer end speech,
     * dated at the end of the last near block. */
    int near = total_db >= peak_db - FAR_DB;
    if (speech && near && state == SPEECH && total_db > peak_db) peak_db = total_db;
    peak_db -= PEAK_DECAY_DB;

    switch (state) {
    case SILENT:
        if (speech) {
            state = PENDING;
            start_sample = block_start;
            last_speech_end = block_end;
            gap_blocks = 0;
            near_blocks = near;
        }
        break;
    case PENDING:
        if (speech) {
            gap_blocks = 0;
            last_speech_end = block_end;
            /* Background speech before the caller's does not date the
             * caller's start: after more than a syllable's quiet onset of
             * far blocks, the first near block does. */
            if (near && near_blocks == 0 && block_start - start_sample > FAR_LEAD_BLOCKS * block_len)
                start_sample = block_start;
            near_blocks += near;
        } else if (++gap_blocks > MAX_GAP_BLOCKS) {
            state = SILENT;
        }
        break;
    case SPEECH:
        if (speech) {
            gap_blocks = 0;
            last_speech_end = block_end;
            if (near) {
                last_near_end = block_end;
                far_blocks = 0;
            } else if (++far_blocks >= FAR_HANG_BLOCKS) {
                emit_at("speech_end", last_near_end);
                state = SILENT;
            }
        } else if (++gap_blocks >= hangover_blocks) {
            emit_at("speech_end", last_speech_end);
            state = SILENT;
        }
        break;
    }
    if (state == PENDING && near_blocks >= NEAR_NEEDED && (last_speech_end - start_sample) / block_len >= min_speech_blocks) {
        emit_at("speech_start", start_sample);
        if (barge_in) vox_emit("clear", ""); /* barge-in: empty the playout queue */
        state = SPEECH;
        gap_blocks = 0;
        far_blocks = 0;
        last_near_end = last_speech_end;
        if (total_db > peak_db) peak_db = total_db;
    }
    /* Noise floor, in dB: fast down, slow up, and between -3 and +3 dB
     * (the spread of noise itself) a slow average, so that in steady noise
     * the floor sits at the noise's median level rather than in its lower
     * tail. In speech only the way down stays open; the way up is 0.5 dB/s.
     * The first STARTUP_BLOCKS follow the level closely in both ways. */
    for (int b = 0; b < BANDS; b++) {
        double d = level[b] - floor_db[b];
        if (blocks_seen < STARTUP_BLOCKS) floor_db[b] += 0.2 * d;
        else if (d < -3) floor_db[b] += 0.3 * d;
        else if (d < (state == SPEECH ? 0 : 3)) floor_db[b] += 0.05 * d;
        else floor_db[b] += min_d(d, state == SPEECH ? 0.005 : 0.03);
        /* Minimum statistics over the last MINSTAT_WINDOWS sub-windows. */
        if (minstat_count == 0 || level[b] < minstat_cur[b]) minstat_cur[b] = level[b];
    }
    if (++minstat_count == MINSTAT_SPAN) {
        for (int b = 0; b < BANDS; b++) {
            for (int w = MINSTAT_WINDOWS - 1; w > 0; w--) minstat[b][w] = minstat[b][w - 1];
            minstat[b][0] = minstat_cur[b];
        }
        minstat_count = 0;
        if (minstat_filled < MINSTAT_WINDOWS) minstat_filled++;
        if (minstat_filled == MINSTAT_WINDOWS) {
            for (int b = 0; b < BANDS; b++) {
                double m = minstat[b][0];
                for (int w = 1; w < MINSTAT_WINDOWS; w++)
                    if (minstat[b][w] < m) m = minstat[b][w];
                /* The quietest 40 ms of the last 3 s, less the bias of a
                 * minimum, is above the floor: the noise rose. Lift the
                 * floor to it. */
                if (m + MINSTAT_BIAS > floor_db[b]) floor_db[b] = m + MINSTAT_BIAS;
            }
        }
    }
    blocks_seen++;
    samples_seen = block_end;
}

/* The filter bank runs its three bands side by side, one in each lane of
 * a WebAssembly SIMD vector (the fourth lane has zero coefficients and stays
 * zero). Each lane runs its band's two biquads, the high-pass into the
 * low-pass, as y = b0 x + z1; z1 = b1 x - a1 y + z2; z2 = b2 x - a2 y: the
 * float operations a scalar loop over the bands does, in the same order, so
 * the results are bit for bit the same, in a third of the instructions. The filters' state lives in
 * locals between two blocks rather than in memory for every sample, and
 * goes back to hp, lp and band_energy where end_block and the next frame
 * read it. */
typedef float v4f __attribute__((vector_size(16)));

#define LANES(field, q) ((v4f){(q)[0].field, (q)[1].field, (q)[2].field, 0})

__attribute__((target("simd128")))
static void filter_bank(const int16_t *s, int32_t samples) {
    v4f hb0 = LANES(b0, hp), hb1 = LANES(b1, hp), hb2 = LANES(b2, hp), ha1 = LANES(a1, hp), ha2 = LANES(a2, hp);
    v4f lb0 = LANES(b0, lp), lb1 = LANES(b1, lp), lb2 = LANES(b2, lp), la1 = LANES(a1, lp), la2 = LANES(a2, lp);
    v4f hz1 = LANES(z1, hp), hz2 = LANES(z2, hp), lz1 = LANES(z1, lp), lz2 = LANES(z2, lp);
    v4f e = {band_energy[0], band_energy[1], band_energy[2], 0};
    int32_t i = 0;
    while (i < samples) {
        int32_t n = block_len - block_fill;
        if (n > samples - i) n = samples - i;
        for (int32_t k = i; k < i + n; k++) {
            float xs = s[k];
            v4f x = {xs, xs, xs, xs};
            v4f y = hb0 * x + hz1;
            hz1 = hb1 * x - ha1 * y + hz2;
            hz2 = hb2 * x - ha2 * y;
            v4f z = lb0 * y + lz1;
            lz1 = lb1 * y - la1 * z + lz2;
            lz2 = lb2 * y - la2 * z;
            e += z * z;
        }
        i += n;
        block_fill += n;
        if (block_fill == block_len) {
            for (int b = 0; b < BANDS; b++) band_energy[b] = e[b];
            end_block(); /* which zeroes band_energy */
            e = (v4f){0, 0, 0, 0};
            block_fill = 0;
        }
    }
    for (int b = 0; b < BANDS; b++) {
        hp[b].z1 = hz1[b], hp[b].z2 = hz2[b], lp[b].z1 = lz1[b], lp[b].z2 = lz2[b];
        band_energy[b] = e[b];
    }
}

VOX_PROCESS {
    filter_bank(vox_samples(), samples);
    return samples;
}

VOX_EVENT {
    (void)arg;
    if (kind == VOX_EVENT_FLUSH && state == SPEECH) {
        emit_at("speech_end", last_speech_end);
        state = SILENT;
    }
    return VOX_OK;
}
