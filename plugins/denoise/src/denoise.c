/*
 * denoise: the stock noise suppressor. SpeexDSP's preprocessor (preprocess.c:
 * a spectral-subtraction suppressor with a minima-controlled noise estimate
 * and Ephraim-Malah style gains), compiled to wasm32 from Debian's speexdsp
 * source package (Makefile); this file is the plugin's glue only. It runs in
 * 20 ms blocks (blocks.h takes frames of other lengths) and delays the audio
 * by one block, the overlap of its analysis window.
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>

#include "blocks.h"

/* The preprocessor calls the echo canceller's residual estimate only when
 * it is given an echo state (SPEEX_PREPROCESS_SET_ECHO_STATE), which this
 * plugin never does; this definition keeps mdf.c out of the module. */
void speex_echo_get_residual(SpeexEchoState *st, float *residual_echo, int len) {
    (void)st, (void)residual_echo, (void)len;
    __builtin_trap();
}

#define BLOCKS_PER_SECOND 50

static double suppress_db = -40;
static SpeexPreprocessState *pre;
static int block;

VOX_INIT {
    static const char *const keys[] = {"suppress_db", 0};
    const char *json = vox_bytes();
    if (vox_config_check_keys(json, config_len, "denoise", keys) != VOX_OK) return VOX_BAD_CONFIG;
    /* present but not a number reads as absent to vox_config_number */
    int present = vox_config_find(json, config_len, "suppress_db") >= 0;
    if (present && (!vox_config_number(json, config_len, "suppress_db", &suppress_db) || !(suppress_db >= -90 && suppress_db <= 0))) {
        vox_log(VOX_LOG_ERROR, "denoise: \"suppress_db\" must be a number from -90 to 0");
        return VOX_BAD_CONFIG;
    }
    return VOX_OK;
}

/* The state is made here, once the rate is known. */
VOX_RATE {
    if (input_rate != 8000 && input_rate != 16000 && input_rate != 24000) return VOX_BAD_RATE;
    if (pre) return input_rate == block * BLOCKS_PER_SECOND ? input_rate : VOX_BAD_STATE;
    block = input_rate / BLOCKS_PER_SECOND;
    pre = speex_preprocess_state_init(block, input_rate);
    if (!pre) {
        vox_log(VOX_LOG_ERROR, "denoise: out of memory for the suppressor's state");
        return VOX_ERROR;
    }
    spx_int32_t on = 1, off = 0, suppress = (spx_int32_t)suppress_db;
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_DENOISE, &on);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &suppress);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_AGC, &off);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_VAD, &off);
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_DEREVERB, &off);
    return input_rate;
}

static void denoise_block(int16_t *mic, const int16_t *ref) {
    (void)ref;
    speex_preprocess_run(pre, mic);
}

VOX_PROCESS {
    if (!pre) return VOX_BAD_STATE;
    blocks_run(vox_samples(), 0, samples, block, denoise_block);
    return samples;
}
