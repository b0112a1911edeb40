/*
 * aec: the stock echo canceller. SpeexDSP's MDF echo canceller (mdf.c,
 * Valin's multidelay block frequency-domain adaptive filter with its two-path
 * double-talk control) against the far-end reference the host gives
 * (abi/ABI.md section 11), then SpeexDSP's preprocessor to suppress the
 * residual echo the linear filter leaves (preprocess.c, with the canceller's
 * state). The library is Debian's speexdsp source package, compiled here to
 * wasm32 (Makefile); this file is the plugin's glue only.
 *
 * The reference is delayed first by the bulk delay of the echo path
 * (network, carrier, handset): the delay_ms hint, or, without one, what the
 * plugin's delay estimator measures (below), so that the adaptive filter's
 * tail_ms need cover only what is left of it and the echo's own length.
 * After the preprocessor a non-linear processor gates what is left of the
 * echo while the caller is not talking, so that a VAD after the plugin
 * cannot hear it. MDF runs in 20 ms blocks (BLOCKS_PER_SECOND; blocks.h takes frames of
 * other lengths). The preprocessor's overlapping window delays the output by
 * one block.
 */
#define VOX_WANTS_REFERENCE
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>

#include "blocks.h"

#define MAX_RATE 24000
#define MAX_TAPS 8000 /* 500 ms at 16 kHz: what the arena (arena.c) holds */
#define MAX_DELAY_MS 500
#define MAX_TAIL_MS 500
#define MAX_DELAY (MAX_DELAY_MS * (MAX_RATE / 1000))
#define BLOCKS_PER_SECOND 50
#define MAX_BLOCK (MAX_RATE / BLOCKS_PER_SECOND)
/* The filter's length when the delay is estimated (no delay_ms): the echo's
 * own length after its first reflection, with the estimator's margin. */
#define ESTIMATED_TAIL_MS 100
#define FIXED_TAIL_MS 260

static double tail_ms = 0, delay_ms = -1, suppress_db = -40, suppress_active_db = -15, nlp_db = -60;
static int denoise = 1;

static SpeexEchoState *echo, *shadow;
static SpeexPreprocessState *pre;
static int block, tail;

/* The shadow canceller. MDF re-learns a changed echo path slowly: its
 * learning rate follows its leakage estimate, which tracks over seconds, so
 * a converged filter whose path changed (the caller moved the handset)
 * takes 2-3 s to cancel again, and restarting it on a suspected change
 * would throw away a good filter each time double talk looks like one
 * (the caller's voice is what the filter cannot explain, as a new path's
 * echo is). So a suspected change starts a second, fresh MDF (shadow)
 * beside the running one instead: the delay estimator starts again from
 * nothing (what it had is the old path's), and once it has locked, the
 * shadow sits at the delay found and is fed the microphone and reference
 * from SHADOW_LOOKBACK blocks before the suspicion on (kept in rings),
 * CATCH_UP blocks more per block until it has caught up, so that it learns
 * from the change on. It takes over only when its output is SWAP_RATIO
 * under the running filter's over the last 200 ms of the far end talking;
 * one that has not within SHADOW_BLOCKS is dropped. A false suspicion
 * costs CPU, not the running filter. The suspicion: a filter that had
 * converged whose ERLE falls under SUSPECT_ERLE for SUSPECT_BLOCKS while
 * the far end talks (below). While the estimator relocks (RELOCK_BLOCKS)
 * the NLP does not ask MDF whether the caller talks (Geigel's test does),
 * and each delay it confirms (with EST_RELOCK_MARGIN, the caller not
 * asked: a wrong one costs only the shadow) that is not the shadow's
 * starts the shadow again there. An estimate out of the running filter's
 * reach once it has converged also goes to the shadow, not to a restart. */
#define BACKLOG 64 /* blocks of the microphone kept: 1.28 s */
#define SHADOW_LOOKBACK 6 /* the suspicion comes 100-140 ms after a change */
#define CATCH_UP 3
#define SUSPECT_ERLE 4.0f /* 6 dB */
#define SUSPECT_BLOCKS 3
#define SWAP_RATIO 0.5f /* 3 dB */
#define SWAP_MIN_BLOCKS 5
#define SHADOW_ERLE 2.0f /* 3 dB */
#define SHADOW_BLOCKS 150
#define RELOCK_BLOCKS 75 /* the estimator's time to find the delay again */
static spx_int16_t mic_ring[BACKLOG][MAX_BLOCK], shadow_mic[MAX_BLOCK], shadow_far[MAX_BLOCK], shadow_out[MAX_BLOCK];
/* relocking: blocks since the suspicion (-1: none); shadow_next: the block
 * the shadow takes next (-1: no shadow) */
static int relocking = -1, relock_from, shadow_next = -1, shadow_from, shadow_delay, shadow_compared, suspect;
static float sus_mic, sus_out, cmp_mic, cmp_main, cmp_shadow, shadow_conv_mic, shadow_conv_out;
static int had_converged;

/* The reference's history, a ring of MAX_DELAY + BACKLOG blocks written as
 * the host gives it; the filter reads it delay samples back, so that the
 * estimator can move the delay at once, and the shadow past blocks. */
#define HISTORY (MAX_DELAY + (BACKLOG + 1) * MAX_BLOCK)
static spx_int16_t history[HISTORY];
static int delay, history_pos;
static spx_int16_t far_block[MAX_BLOCK], out_block[MAX_BLOCK];

/* The delay estimator (used when delay_ms is not given). MDF's filter must
 * span the echo path's bulk delay as well as its tail, and it converges
 * more slowly the longer it is; so the bulk delay is measured and taken off
 * by the delay line, and the filter covers only ESTIMATED_TAIL_MS after it.
 * The measure is the cross-correlation, at lags of 0 to MAX_DELAY_MS in
 * 4 ms steps, of the changes of the log energy of the microphone and of
 * the reference per 4 ms (their onsets and decays: level-free, and sharp
 * where speech's envelope itself is not), averaged over EST_TAU_S: 630
 * multiply-adds a block, against MDF's thousands. The lag of its peak is
 * the delay once the peak stands out (EST_MIN_RHO of the normalised
 * correlation, EST_MARGIN over the best lag more than EST_APART lags away)
 * for EST_CONFIRM blocks running, and the caller has not been talking (a
 * common onset of the caller and the bot, turn taking, is a lag too; the
 * NLP's tests below, without the one that asks MDF). When
 * it lies outside what the filter covers (the filter must hold the lag and
 * EST_ROOM_MS after it), or on the first estimate of a filter that has not
 * converged yet, the delay line moves to EST_PRE_MS before it and MDF
 * starts again (the history of the reference makes the move immediate). */
#define EST_SUBS 5 /* 4 ms sub-blocks per 20 ms block */
#define EST_LAGS (MAX_DELAY_MS / 4 + 1)
#define EST_TAU_S 0.5f
#define EST_DECAY (1 - 1 / (EST_TAU_S * 250))
#define EST_MIN_RHO 0.2f
#define EST_MARGIN 1.5f
#define EST_APART 6 /* lags: 24 ms, more than an echo tail's smearing of the peak */
#define EST_CONFIRM 3
#define EST_RELOCK_MARGIN 1.25f
#define EST_MIN_FAR 20.0f /* the reference's changes must have this much energy (a few onsets) */
#define EST_PRE_MS 24
#define EST_ROOM_MS 40 /* what the filter must hold after the first reflection */
static int estimating;
static float est_far[EST_LAGS], est_corr[EST_LAGS], est_mm, est_ff, est_last_mic, est_last_far;
static int est_pos, est_agree, est_last_best, estimated_ms = -1, blocks_done;

/* The non-linear processor (NLP), on by default (nlp_db): SpeexDSP's
 * preprocessor suppresses the residual echo by its spectral estimate, which
 * leaves onsets after a pause, and the first second, before MDF has
 * converged, audible to a VAD: a barge-in on the bot's own voice. So, after
 * it, a block where the far end can be echoing and the caller is not
 * talking is attenuated by nlp_db and filled with comfort noise. Whether the
 * far end can be echoing is its peak over the blocks the filter spans (the
 * delay line's delay to delay + tail; all of the search range while the
 * delay is not yet known) against FAR_ACTIVE. Whether the caller talks
 * (double talk): the microphone must be SPEAKING over the line's noise
 * (the least a block of it holds, rising 0.1 dB a block) and, while the far
 * end can be echoing, either, once MDF has converged (it takes CONVERGED
 * of the echo off over the last half second of the far end talking, noise
 * taken off both sides), MDF's output over NEAR_RATIO of its echo estimate
 * (what the filter cannot explain), or, before, ITU-T G.168's Geigel test
 * with GEIGEL at 1: the microphone's peak over the far end's (a passive
 * echo path is no louder than what made it; G.168's 0.5, a 6 dB hybrid
 * loss, let a dispersed -6 dB echo through as the caller). HANGOVER blocks
 * after it still count as the caller's, so that a phrase's quiet syllables
 * pass too. The gain rises at once (40 dB in 5 ms at 8 kHz: the caller's
 * first syllable is kept) and falls at the end of the hangover. */
#define GEIGEL 1.0f
#define NEAR_RATIO 0.25f
#define CONVERGED 10.0f /* 10 dB */
#define HANGOVER 10
/* The first STARTUP_BLOCKS are gated: the preprocessor has not learnt the
 * line's noise yet and passes it, after a first block of silence (its
 * latency): an onset to a VAD at the call's start. */
#define STARTUP_BLOCKS 10
#define SPEAKING 10.0f /* 10 dB */
#define FAR_ACTIVE 100 /* -50 dBFS peak: below, the far end is silent */
#define SPAN_BLOCKS ((MAX_DELAY_MS + MAX_TAIL_MS) / (1000 / BLOCKS_PER_SECOND) + 2)
static int far_peaks[SPAN_BLOCKS], peak_pos, hangover, caller_hangover;
static float nlp_floor = 0.01f, nlp_gain = 1, conv_mic, conv_out, mic_floor = 1e12f;
static int converged;
/* Comfort noise: a gated line must not fall silent, or the line's noise
 * coming back when the gate opens is an onset to a VAD. While gated, white
 * noise at the output's noise floor (the minimum of its block RMS, rising
 * 0.1 dB a block) fills what the gate takes out. And the output never
 * falls under DITHER_DBFS of noise while the NLP is on: a VAD's floor in
 * digital silence is the silence (vad's is -100 dBFS), over which any
 * residual echo the gate lets through, even at -70 dBFS, is an onset. */
#define DITHER_DBFS -60
static float noise_floor = 1e9f, dither;
static uint32_t noise_seed = 1;

static int range(const char *json, int32_t len, const char *key, double lo, double hi, double *v) {
    /* present but not a number reads as absent to vox_config_number */
    if (vox_config_find(json, len, key) >= 0 && (!vox_config_number(json, len, key, v) || !(*v >= lo && *v <= hi))) {
        char buf[160];
        vox_text t = vox_text_init(buf, sizeof buf);
        vox_text_str(&t, "aec: \"");
        vox_text_str(&t, key);
        vox_text_str(&t, "\" must be a number from ");
        vox_text_fixed(&t, lo, 0);
        vox_text_str(&t, " to ");
        vox_text_fixed(&t, hi, 0);
        vox_log_text(VOX_LOG_ERROR, &t);
        return -1;
    }
    return 0;
}

VOX_INIT {
    static const char *const keys[] = {"tail_ms", "delay_ms", "suppress_db", "suppress_active_db", "nlp_db", "denoise", 0};
    const char *json = vox_bytes();
    if (vox_config_check_keys(json, config_len, "aec", keys) != VOX_OK) return VOX_BAD_CONFIG;
    if (range(json, config_len, "tail_ms", 10, MAX_TAIL_MS, &tail_ms) ||
        range(json, config_len, "delay_ms", 0, MAX_DELAY_MS, &delay_ms) ||
        range(json, config_len, "suppress_db", -90, 0, &suppress_db) ||
        range(json, config_len, "suppress_active_db", -90, 0, &suppress_active_db) ||
        range(json, config_len, "nlp_db", -90, 0, &nlp_db))
        return VOX_BAD_CONFIG;
    if (vox_config_bool(json, config_len, "denoise", &denoise) < 0) {
        vox_log(VOX_LOG_ERROR, "aec: \"denoise\" must be true or false");
        return VOX_BAD_CONFIG;
    }
    estimating = delay_ms < 0;
    if (tail_ms == 0) tail_ms = estimating ? ESTIMATED_TAIL_MS : FIXED_TAIL_MS;
    return VOX_OK;
}

/* The states are made here, once the rate is known. */
VOX_RATE {
    if (input_rate != 8000 && input_rate != 16000 && input_rate != 24000) return VOX_BAD_RATE;
    if (echo) return input_rate == block * BLOCKS_PER_SECOND ? input_rate : VOX_BAD_STATE;
    block = input_rate / BLOCKS_PER_SECOND;
    tail = (int)(tail_ms * input_rate / 1000 + 0.5);
    if (tail > MAX_TAPS) {
        vox_log(VOX_LOG_ERROR, "aec: tail_ms too long for the input rate: at most 8000 samples (500 ms at 16 kHz, 333 ms at 24 kHz)");
        return VOX_BAD_RATE;
    }
    delay = estimating ? 0 : (int)(delay_ms * input_rate / 1000 + 0.5);
    est_last_mic = est_last_far = __builtin_logf(100); /* silence's level: see log_power */
    nlp_floor = (float)__builtin_pow(10, nlp_db / 20);
    dither = nlp_floor < 1 ? 32768 * (float)__builtin_pow(10, DITHER_DBFS / 20.0) : 0;
    echo = speex_echo_state_init(block, tail);
    shadow = echo ? speex_echo_state_init(block, tail) : 0;
    pre = shadow ? speex_preprocess_state_init(block, input_rate) : 0;
    if (!pre) {
        vox_log(VOX_LOG_ERROR, "aec: out of memory for the echo canceller's state");
        return VOX_ERROR;
    }
    spx_int32_t rate = input_rate, off = 0, denoise_on = denoise;
    spx_int32_t suppress = (spx_int32_t)suppress_db, active = (spx_int32_t)suppress_active_db;
    speex_echo_ctl(echo, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
    speex_echo_ctl(shadow, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_STATE, echo);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, &suppress);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, &active);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_DENOISE, &denoise_on);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_AGC, &off);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_VAD, &off);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_DEREVERB, &off);
    return input_rate;
}

/* MDF starts again, in its fast initial adaptation: the delay line moved
 * (why = "echo delay ", ms its estimate), or the filter lost an echo it
 * had (why = "echo path changed", ms < 0). Logged, with what the filter now
 * covers. */
static void restart(const char *why, int ms) {
    speex_echo_state_reset(echo);
    conv_mic = conv_out = 0;
    converged = had_converged = 0;
    shadow_next = -1;
    int rate = block * BLOCKS_PER_SECOND;
    char buf[160];
    vox_text t = vox_text_init(buf, sizeof buf);
    vox_text_str(&t, "aec: ");
    vox_text_str(&t, why);
    if (ms >= 0) {
        vox_text_int(&t, ms);
        vox_text_str(&t, " ms");
    }
    vox_text_str(&t, " at ");
    vox_text_fixed(&t, (double)blocks_done / BLOCKS_PER_SECOND, 2);
    vox_text_str(&t, " s: the filter starts again over ");
    vox_text_int(&t, (int64_t)delay * 1000 / rate);
    vox_text_str(&t, " to ");
    vox_text_int(&t, (int64_t)(delay + tail) * 1000 / rate);
    vox_text_str(&t, " ms");
    vox_log_text(VOX_LOG_INFO, &t);
}

/* The shadow starts, fresh, with its delay line at `at` samples, on the
 * blocks from SHADOW_LOOKBACK before block `since` (or the oldest kept) on. */
static void start_shadow(int at, int since) {
    speex_echo_state_reset(shadow);
    shadow_delay = at;
    shadow_next = since - SHADOW_LOOKBACK;
    if (shadow_next < blocks_done - BACKLOG + 1) shadow_next = blocks_done - BACKLOG + 1;
    if (shadow_next < 1) shadow_next = 1;
    shadow_from = blocks_done;
    shadow_compared = 0;
    cmp_mic = cmp_main = cmp_shadow = shadow_conv_mic = shadow_conv_out = 0;
}

static float log_power(const int16_t *x, int n) {
    float e = 0;
    for (int i = 0; i < n; i++) e += (float)x[i] * x[i];
    return __builtin_logf(e / n + 100); /* +100: -70 dBFS, so that silence's changes are nil */
}

/* One block of the estimator; moves the delay line (and restarts MDF) when
 * the echo's delay is known and out of the filter's reach. */
static void estimate_delay(const int16_t *mic, const int16_t *ref) {
    int sub = block / EST_SUBS;
    for (int s = 0; s < EST_SUBS; s++) {
        float lm = log_power(mic + s * sub, sub), lf = log_power(ref + s * sub, sub);
        float dm = lm - est_last_mic, df = lf - est_last_far;
        est_last_mic = lm;
        est_last_far = lf;
        if (++est_pos == EST_LAGS) est_pos = 0;
        est_far[est_pos] = df;
        est_mm = EST_DECAY * est_mm + dm * dm;
        est_ff = EST_DECAY * est_ff + df * df;
        for (int l = 0, k = est_pos; l < EST_LAGS; l++) {
            est_corr[l] = EST_DECAY * est_corr[l] + dm * est_far[k];
            if (--k < 0) k = EST_LAGS - 1;
        }
    }
    if (est_ff < EST_MIN_FAR) return;
    int best = 0;
    for (int l = 1; l < EST_LAGS; l++)
        if (est_corr[l] > est_corr[best]) best = l;
    float second = 0;
    for (int l = 0; l < EST_LAGS; l++)
        if ((l < best - EST_APART || l > best + EST_APART) && est_corr[l] > second) second = est_corr[l];
    float peak = est_corr[best];
    if (!(peak > EST_MIN_RHO * __builtin_sqrtf(est_mm * est_ff)) || peak < (relocking >= 0 ? EST_RELOCK_MARGIN : EST_MARGIN) * second) {
        est_agree = 0;
        return;
    }
    /* the same lag (within 8 ms) EST_CONFIRM blocks running, the caller
     * silent (a common onset of the caller and the bot, turn taking, is a
     * lag too) unless there is no estimate yet */
    if (caller_hangover > 0 && estimated_ms >= 0 && relocking < 0) {
        est_agree = 0;
        return;
    }
    est_agree = est_agree > 0 && best >= est_last_best - 2 && best <= est_last_best + 2 ? est_agree + 1 : 1;
    est_last_best = best;
    if (est_agree < EST_CONFIRM) return;
    int rate = block * BLOCKS_PER_SECOND, lag = best * 4 * rate / 1000;
    int pre_margin = EST_PRE_MS * rate / 1000, room = EST_ROOM_MS * rate / 1000;
    if (room > tail / 2) room = tail / 2;
    int first = estimated_ms < 0;
    estimated_ms = best * 4;
    int at = lag > pre_margin ? lag - pre_margin : 0;
    if (relocking >= 0) {
        /* found again after a suspected change: the shadow moves there
         * unless it is there already */
        int now = shadow_next < 0 ? delay : shadow_delay;
        if (at < now - pre_margin / 2 || at > now + pre_margin / 2) start_shadow(at, relock_from);
        return;
    }
    /* within reach; the first estimate centres the filter on the echo
     * unless it has converged already */
    if (lag >= delay && lag + room <= delay + tail && !(first && !converged)) return;
    /* a filter that has converged is kept until a shadow at the new
     * delay does better */
    if (had_converged) {
        if (shadow_next < 0) start_shadow(at, blocks_done);
        return;
    }
    delay = at;
    restart("echo delay ", estimated_ms);
}

/* A suspected change of the echo path: the estimator starts again (what it
 * has measured is the old path's), or, with a fixed delay, the shadow
 * starts at once. */
static void suspect_change(void) {
    if (!estimating) {
        start_shadow(delay, blocks_done);
        return;
    }
    for (int l = 0; l < EST_LAGS; l++) est_corr[l] = 0;
    est_mm = est_ff = 0;
    est_agree = 0;
    relocking = 0;
    relock_from = blocks_done;
    start_shadow(delay, blocks_done);
}

static float excess(float p) { return p > mic_floor ? p - mic_floor : 0; }

static float power(const int16_t *x, int n) {
    float e = 0;
    for (int i = 0; i < n; i++) e += (float)x[i] * x[i];
    return e;
}

/* The shadow's blocks of this block (catching up, CATCH_UP more), and, on
 * the block it has caught up, its output against the running filter's
 * (out_block); it takes over when its output is SWAP_RATIO under it. */
static void run_shadow(float p_mic, int far_active) {
    for (int n = 0; n <= CATCH_UP && shadow_next <= blocks_done; n++, shadow_next++) {
        int back = (blocks_done - shadow_next + 1) * block;
        for (int i = 0; i < block; i++) {
            int at = history_pos - (back - i) - shadow_delay;
            shadow_far[i] = history[at < 0 ? at + HISTORY : at];
            shadow_mic[i] = mic_ring[shadow_next % BACKLOG][i];
        }
        speex_echo_cancellation(shadow, shadow_mic, shadow_far, shadow_out);
    }
    if (shadow_next <= blocks_done) return; /* still catching up */
    if (far_active) {
        float p_shadow = power(shadow_out, block), p_main = power(out_block, block);
        cmp_mic = 0.9f * cmp_mic + excess(p_mic);
        cmp_main = 0.9f * cmp_main + excess(p_main);
        cmp_shadow = 0.9f * cmp_shadow + excess(p_shadow);
        shadow_conv_mic = 0.96f * shadow_conv_mic + excess(p_mic);
        shadow_conv_out = 0.96f * shadow_conv_out + excess(p_shadow);
        shadow_compared++;
    }
    if (shadow_compared >= SWAP_MIN_BLOCKS && cmp_main > 0 && cmp_shadow < SWAP_RATIO * cmp_main && cmp_mic > SHADOW_ERLE * cmp_shadow) {
        SpeexEchoState *old = echo;
        echo = shadow;
        shadow = old;
        speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_STATE, echo);
        int rate = block * BLOCKS_PER_SECOND;
        char buf[200];
        vox_text t = vox_text_init(buf, sizeof buf);
        vox_text_str(&t, "aec: echo path changed at ");
        vox_text_fixed(&t, (double)blocks_done / BLOCKS_PER_SECOND, 2);
        vox_text_str(&t, " s: a second filter over ");
        vox_text_int(&t, (int64_t)shadow_delay * 1000 / rate);
        vox_text_str(&t, " to ");
        vox_text_int(&t, (int64_t)(shadow_delay + tail) * 1000 / rate);
        vox_text_str(&t, " ms, started at ");
        vox_text_fixed(&t, (double)shadow_from / BLOCKS_PER_SECOND, 2);
        vox_text_str(&t, " s, takes over, ");
        vox_text_fixed(&t, 10 * __builtin_log10f(cmp_main / cmp_shadow), 1);
        vox_text_str(&t, " dB under the first");
        vox_log_text(VOX_LOG_INFO, &t);
        delay = shadow_delay;
        conv_mic = shadow_conv_mic;
        conv_out = shadow_conv_out;
        had_converged = 0; /* until it has converged: no suspicion of it */
        for (int i = 0; i < block; i++) out_block[i] = shadow_out[i];
        shadow_next = -1;
    } else if (blocks_done - shadow_from > SHADOW_BLOCKS) {
        shadow_next = -1;
    }
}

static int peak(const int16_t *x, int n) {
    int p = 0;
    for (int i = 0; i < n; i++) {
        int a = x[i] < 0 ? -x[i] : x[i];
        if (a > p) p = a;
    }
    return p;
}

/* One block: the estimator, the reference through the delay line, MDF,
 * the preprocessor, the NLP; mic is processed in place. */
static void cancel_block(int16_t *mic, const int16_t *ref) {
    blocks_done++;
    for (int i = 0; i < block; i++) mic_ring[blocks_done % BACKLOG][i] = mic[i];
    if (estimating) estimate_delay(mic, ref);
    for (int i = 0; i < block; i++) {
        history[history_pos] = ref[i];
        int at = history_pos - delay;
        far_block[i] = history[at < 0 ? at + HISTORY : at];
        if (++history_pos == HISTORY) history_pos = 0;
    }
    /* the far end that can be echoing now: delay to delay + tail back, or
     * all of the search range while the delay is not known; and that
     * more recent than the span (early_peak), and the shadow's span */
    int far_now = far_peaks[peak_pos] = peak(ref, block);
    int first = delay / block, last = (delay + tail) / block + 1;
    if (estimating && estimated_ms < 0) first = 0, last = ((EST_LAGS - 1) * 4 * BLOCKS_PER_SECOND * block / 1000 + tail) / block + 1;
    if (last >= SPAN_BLOCKS) last = SPAN_BLOCKS - 1;
    int sfirst = shadow_next >= 0 ? shadow_delay / block : first, slast = shadow_next >= 0 ? (shadow_delay + tail) / block + 1 : last;
    if (slast >= SPAN_BLOCKS) slast = SPAN_BLOCKS - 1;
    int span_peak = 0, early_peak = 0, shadow_peak = 0;
    for (int a = 0, b = peak_pos; a <= (last > slast ? last : slast); a++, b--) {
        if (b < 0) b += SPAN_BLOCKS;
        if (a >= sfirst && a <= slast && far_peaks[b] > shadow_peak) shadow_peak = far_peaks[b];
        if (a > last) continue;
        if (a < first) {
            if (far_peaks[b] > early_peak) early_peak = far_peaks[b];
        } else if (far_peaks[b] > span_peak) {
            span_peak = far_peaks[b];
        }
    }
    if (++peak_pos == SPAN_BLOCKS) peak_pos = 0;
    int mic_peak = peak(mic, block);
    speex_echo_cancellation(echo, mic, far_block, out_block);
    /* an echo path that moves closer (often a louder one) echoes the far
     * end that is more recent than the span: when only that part talks,
     * the far end is active too, and a caller must pass Geigel's test
     * against it */
    int early_only = span_peak < FAR_ACTIVE && early_peak >= FAR_ACTIVE;
    int far_active = span_peak >= FAR_ACTIVE || early_only;
    float p_main = power(out_block, block);
    if (relocking >= 0 && ++relocking > RELOCK_BLOCKS) relocking = -1;
    if (shadow_next >= 0) run_shadow(power(mic, block), far_active);
    float p_mic = 0, p_out = 0, p_echo = 0;
    for (int i = 0; i < block; i++) {
        float m = mic[i], o = out_block[i];
        p_mic += m * m;
        p_out += o * o;
        p_echo += (m - o) * (m - o);
    }
    /* the line's noise, the least a block of the microphone holds (at
     * least -90 dBFS), rising 0.1 dB a block, or 1 dB while more than 20 dB
     * under the block (a line that starts silent and then hisses), is taken
     * off both sides of MDF's ERLE */
    if (p_mic < mic_floor) mic_floor = p_mic > block ? p_mic : block;
    else mic_floor *= p_mic > 100 * mic_floor ? 1.259f : 1.023f;
    if (far_active) {
        conv_mic = 0.96f * conv_mic + (p_mic > mic_floor ? p_mic - mic_floor : 0); /* half a second's memory */
        conv_out = 0.96f * conv_out + (p_out > mic_floor ? p_out - mic_floor : 0);
    }
    converged = conv_mic > CONVERGED * conv_out;
    had_converged |= converged;
    speex_preprocess_run(pre, out_block);
    /* the caller can be talking when the microphone is SPEAKING over the
     * line's noise (taken as at least -70 dBFS) */
    float quiet = mic_floor > 100.0f * block ? mic_floor : 100.0f * block;
    int speaking = p_mic > SPEAKING * quiet, in_span = speaking && mic_peak > GEIGEL * (span_peak > shadow_peak ? span_peak : shadow_peak);
    int geigel = early_only ? speaking && mic_peak > GEIGEL * early_peak : in_span;
    /* a converged filter that explains little of the microphone, which
     * Geigel's test does not take for the caller, while the far end is
     * still talking (not the end of its turn, where the caller's answer
     * starts): a change suspected */
    if (had_converged && far_active && far_now >= FAR_ACTIVE && relocking < 0 && shadow_next < 0) {
        sus_mic = 0.7f * sus_mic + excess(p_mic);
        sus_out = 0.7f * sus_out + excess(p_main);
        suspect = sus_mic < SUSPECT_ERLE * sus_out && !geigel ? suspect + 1 : 0;
        if (suspect >= SUSPECT_BLOCKS) {
            suspect_change();
            /* what MDF took for the caller may have been the new path's
             * echo: the gate closes, for Geigel's test to open it again */
            hangover = 0;
            suspect = 0;
            sus_mic = sus_out = 0;
        }
    }
    int trusted = converged && relocking < 0;
    int near = blocks_done > STARTUP_BLOCKS && (far_active ? (trusted && !early_only ? speaking && p_out > NEAR_RATIO * p_echo : geigel) : speaking);
    if (near) hangover = HANGOVER;
    else if (hangover > 0) hangover--;
    /* the caller by the tests that do not ask MDF, which an echo path
     * that moved fails as double talk would: what holds the estimator */
    if (blocks_done > STARTUP_BLOCKS && (span_peak >= FAR_ACTIVE ? in_span : speaking)) caller_hangover = HANGOVER;
    else if (caller_hangover > 0) caller_hangover--;
    float target = (far_active && hangover == 0) || blocks_done <= STARTUP_BLOCKS ? nlp_floor : 1;
    float energy = 0;
    for (int i = 0; i < block; i++) energy += (float)out_block[i] * out_block[i];
    float rms = __builtin_sqrtf(energy / block);
    noise_floor = rms < noise_floor ? (rms > 1 ? rms : 1) : noise_floor * 1.0116f; /* 1: -90 dBFS, from where it can rise */
    float cn_rms = noise_floor > dither ? noise_floor : dither;
    for (int i = 0; i < block; i++) {
        /* down at once at the end of the hangover, up by 40 dB in 5 ms */
        if (target < nlp_gain) nlp_gain = target;
        else if ((nlp_gain *= 1.122f) > target) nlp_gain = target;
        noise_seed = noise_seed * 1664525u + 1013904223u;
        float u = ((int32_t)noise_seed / 2147483648.0f) * 1.7320508f; /* uniform, RMS 1 */
        float v = nlp_gain * (out_block[i] + dither * u) + (1 - nlp_gain) * cn_rms * u;
        mic[i] = (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
    }
}

VOX_PROCESS {
    if (!echo) return VOX_BAD_STATE;
    blocks_run(vox_samples(), vox_reference(), samples, block, cancel_block);
    return samples;
}
