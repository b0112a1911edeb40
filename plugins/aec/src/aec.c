/*
 * aec: the stock echo canceller. SpeexDSP's MDF echo canceller (mdf.c,
 * Valin's multidelay block frequency-domain adaptive filter with its two-path
 * double-talk control) against the far-end reference the host gives
 * (abi/ABI.md section 11), then SpeexDSP's preprocessor to suppress the
 * residual echo the linear filter leaves (preprocess.c, with the canceller's
 * state). The library is Debian's speexdsp source package, compiled here to
 * wasm32 (Makefile); this file is the plugin's glue only.
 *
 * The reference is delayed by delay_ms first, a hint for the bulk delay of
 * the echo path (network, carrier, handset), so that the adaptive filter's
 * tail_ms need cover only what is left of it and the echo's own length.
 * MDF runs in 20 ms blocks (BLOCKS_PER_SECOND; blocks.h takes frames of
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

static double tail_ms = 260, delay_ms = 0, suppress_db = -40, suppress_active_db = -15, nlp_db = 0;
static int denoise = 1;

static SpeexEchoState *echo;
static SpeexPreprocessState *pre;
static int block;

/* The delay line of the reference: delay samples behind what the host
 * gives, a ring of MAX_DELAY samples. */
static spx_int16_t delay_line[MAX_DELAY];
static int delay, delay_pos;
static spx_int16_t far_block[MAX_BLOCK], out_block[MAX_BLOCK];

/* The non-linear processor (NLP): SpeexDSP's preprocessor suppresses the
 * residual echo by its spectral estimate, which leaves onsets after a pause
 * and the first second, before MDF has converged, audible to a VAD. So,
 * after it, a block where the far end is talking and the caller is not is
 * attenuated by nlp_db. Whether the caller talks is ITU-T G.168's Geigel
 * test: the microphone's peak over the block against the far end's over the
 * filter's span; an echo path loses 6 dB or more (a hybrid's ERL), so a
 * microphone louder than half the far end's peak (GEIGEL) is the caller.
 * HANGOVER blocks after it still count as the caller's, so that a phrase's
 * quiet syllables pass too. The gain falls at once and rises by 6 dB a
 * block. */
#define GEIGEL 0.6f
#define HANGOVER 10
#define FAR_ACTIVE 100 /* -50 dBFS peak: below, the far end is silent */
#define MAX_SPAN_BLOCKS ((MAX_DELAY_MS + MAX_TAIL_MS) / (1000 / BLOCKS_PER_SECOND) + 1)
static int far_peaks[MAX_SPAN_BLOCKS], span_blocks, peak_pos, hangover;
static float nlp_floor = 0.01f, nlp_gain = 1;
/* Comfort noise: a gated line must not fall silent, or the line's noise
 * coming back when the gate opens is an onset to a VAD. While gated, white
 * noise at the output's noise floor (the minimum of its block RMS, rising
 * 0.1 dB a block) fills what the gate takes out. */
static float noise_floor = 1e9f;
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
    return VOX_OK;
}

/* The states are made here, once the rate is known. */
VOX_RATE {
    if (input_rate != 8000 && input_rate != 16000 && input_rate != 24000) return VOX_BAD_RATE;
    if (echo) return input_rate == block * BLOCKS_PER_SECOND ? input_rate : VOX_BAD_STATE;
    block = input_rate / BLOCKS_PER_SECOND;
    int tail = (int)(tail_ms * input_rate / 1000 + 0.5);
    if (tail > MAX_TAPS) {
        vox_log(VOX_LOG_ERROR, "aec: tail_ms too long for the input rate: at most 8000 samples (500 ms at 16 kHz, 333 ms at 24 kHz)");
        return VOX_BAD_RATE;
    }
    delay = (int)(delay_ms * input_rate / 1000 + 0.5);
    span_blocks = (int)((delay_ms + tail_ms) / (1000 / BLOCKS_PER_SECOND)) + 1;
    nlp_floor = (float)__builtin_pow(10, nlp_db / 20);
    echo = speex_echo_state_init(block, tail);
    pre = echo ? speex_preprocess_state_init(block, input_rate) : 0;
    if (!pre) {
        vox_log(VOX_LOG_ERROR, "aec: out of memory for the echo canceller's state");
        return VOX_ERROR;
    }
    spx_int32_t rate = input_rate, off = 0, denoise_on = denoise;
    spx_int32_t suppress = (spx_int32_t)suppress_db, active = (spx_int32_t)suppress_active_db;
    speex_echo_ctl(echo, SPEEX_ECHO_SET_SAMPLING_RATE, &rate);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_STATE, echo);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, &suppress);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, &active);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_DENOISE, &denoise_on);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_AGC, &off);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_VAD, &off);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_DEREVERB, &off);
    return input_rate;
}

/* One block: the reference through the delay line, MDF, the
 * preprocessor, the NLP; mic is processed in place. */
static void cancel_block(int16_t *mic, const int16_t *ref) {
    for (int i = 0; i < block; i++) {
        if (delay > 0) {
            far_block[i] = delay_line[delay_pos];
            delay_line[delay_pos] = ref[i];
            if (++delay_pos == delay) delay_pos = 0;
        } else {
            far_block[i] = ref[i];
        }
    }
    int mic_peak = 0, far_peak = 0, span_peak = 0;
    for (int i = 0; i < block; i++) {
        int m = mic[i] < 0 ? -mic[i] : mic[i];
        int f = ref[i] < 0 ? -ref[i] : ref[i];
        if (m > mic_peak) mic_peak = m;
        if (f > far_peak) far_peak = f;
    }
    far_peaks[peak_pos] = far_peak;
    if (++peak_pos == span_blocks) peak_pos = 0;
    for (int b = 0; b < span_blocks; b++)
        if (far_peaks[b] > span_peak) span_peak = far_peaks[b];
    speex_echo_cancellation(echo, mic, far_block, out_block);
    speex_preprocess_run(pre, out_block);
    if (mic_peak > GEIGEL * span_peak) hangover = HANGOVER;
    else if (hangover > 0) hangover--;
    float target = span_peak >= FAR_ACTIVE && hangover == 0 ? nlp_floor : 1;
    float energy = 0;
    for (int i = 0; i < block; i++) energy += (float)out_block[i] * out_block[i];
    float rms = __builtin_sqrtf(energy / block);
    noise_floor = rms < noise_floor ? rms : noise_floor * 1.0116f;
    float cn_amp = noise_floor * 1.7320508f; /* uniform in [-a, a] has RMS a/sqrt(3) */
    for (int i = 0; i < block; i++) {
        /* down at once, up by 6 dB a block, sample by sample */
        if (target < nlp_gain) nlp_gain = target;
        else if ((nlp_gain *= 1.00435f) > target) nlp_gain = target;
        noise_seed = noise_seed * 1664525u + 1013904223u;
        float cn = ((int32_t)noise_seed / 2147483648.0f) * cn_amp;
        float v = out_block[i] * nlp_gain + cn * (1 - nlp_gain);
        mic[i] = (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
    }
}

VOX_PROCESS {
    if (!echo) return VOX_BAD_STATE;
    blocks_run(vox_samples(), vox_reference(), samples, block, cancel_block);
    return samples;
}
