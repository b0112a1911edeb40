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

#define BLOCKS_PER_SECOND 50
#define MAX_BINS (24000 / BLOCKS_PER_SECOND) /* the preprocessor's spectrum: a block's samples */

static double suppress_db = -40, oversubtract_db = 3;
static SpeexPreprocessState *pre;
static int block;

/* Over-subtraction. SpeexDSP's noise estimate follows the minima of the
 * spectrum; babble's spectrum fluctuates, so its minima lie well under its
 * mean and the estimate with them: the gain stays high in the pauses (9.8 dB
 * of 20 talkers at 5 dB SNR taken off). The preprocessor's one hook for
 * noise of another source is the echo canceller's residual estimate
 * (SPEEX_PREPROCESS_SET_ECHO_STATE, then speex_echo_get_residual each
 * block), added to its own noise estimate wherever it computes the gains.
 * This plugin has no echo canceller, so the hook returns the preprocessor's
 * own noise estimate, scaled: the noise it subtracts is oversubtract_db
 * over its estimate (the classic over-subtraction factor). The echo
 * suppression levels are set to suppress_db, so that the floor is the same
 * for both parts. */
static float oversubtract = 0;
static spx_int32_t noise_psd[MAX_BINS];

void speex_echo_get_residual(SpeexEchoState *st, float *residual_echo, int len) {
    (void)st;
    speex_preprocess_ctl(pre, SPEEX_PREPROCESS_GET_NOISE_PSD, noise_psd);
    for (int i = 0; i < len; i++) residual_echo[i] = oversubtract * (float)noise_psd[i];
}

VOX_INIT {
    static const char *const keys[] = {"suppress_db", "oversubtract_db", 0};
    const char *json = vox_bytes();
    if (vox_config_check_keys(json, config_len, "denoise", keys) != VOX_OK) return VOX_BAD_CONFIG;
    /* present but not a number reads as absent to vox_config_number */
    int present = vox_config_find(json, config_len, "suppress_db") >= 0;
    if (present && (!vox_config_number(json, config_len, "suppress_db", &suppress_db) || !(suppress_db >= -90 && suppress_db <= 0))) {
        vox_log(VOX_LOG_ERROR, "denoise: \"suppress_db\" must be a number from -90 to 0");
        return VOX_BAD_CONFIG;
    }
    present = vox_config_find(json, config_len, "oversubtract_db") >= 0;
    if (present && (!vox_config_number(json, config_len, "oversubtract_db", &oversubtract_db) || !(oversubtract_db >= 0 && oversubtract_db <= 20))) {
        vox_log(VOX_LOG_ERROR, "denoise: \"oversubtract_db\" must be a number from 0 to 20");
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
    oversubtract = (float)__builtin_pow(10, oversubtract_db / 10) - 1;
    if (oversubtract > 0) {
        /* any non-null state: only the hook above sees it */
        speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_STATE, (void *)&oversubtract);
        speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, &suppress);
        speex_preprocess_ctl(pre, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, &suppress);
    }
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
