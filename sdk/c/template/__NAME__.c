/*
 * __NAME__: a voxhost plugin in C, made by `voxhost plugin new --lang c`.
 *
 * It changes the volume by gain_db decibels and reports every DTMF key as
 * the event __NAME__.key. Keep what you need and replace the processing.
 * voxhost/README.md documents the SDK, voxhost/voxhost.h is all of it.
 *
 * Config: {"gain_db": -6} (the default; -60 to 20). Any other key is refused.
 * Build:  make        Check: make test        Hear: make run CONFIG="gain_db=-12"
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

/* State in statics: the host makes one instance per call, so they are per call. */
static int32_t gain_q16 = 65536; /* the gain in Q16 (65536 = 1.0), set by vox_init */
static int64_t samples_seen;     /* samples processed so far */

/* The config, a JSON object at vox_bytes() ({} when there is none). */
VOX_INIT {
    static const char *const keys[] = {"gain_db", 0};
    double db = -6.0;
    /* A typo'd key is an error, not silently the default. */
    if (vox_config_check_keys(vox_bytes(), config_len, "__NAME__", keys) != VOX_OK) return VOX_BAD_CONFIG;
    if (vox_config_find(vox_bytes(), config_len, "gain_db") >= 0 &&
        !vox_config_number(vox_bytes(), config_len, "gain_db", &db)) {
        vox_log(VOX_LOG_ERROR, "__NAME__: \"gain_db\" must be a number");
        return VOX_BAD_CONFIG;
    }
    if (!(db >= -60.0 && db <= 20.0)) { /* written so that NaN fails too */
        vox_log(VOX_LOG_ERROR, "__NAME__: \"gain_db\" must be from -60 to 20");
        return VOX_BAD_CONFIG;
    }
    gain_q16 = (int32_t)__builtin_floor(vox_db_to_gain(db) * 65536.0 + 0.5);
    return VOX_OK;
}

/* One frame: `samples` PCM16 samples at vox_samples(), processed in place. */
VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / 2) return VOX_BAD_LENGTH;
    int16_t *s = vox_samples();
    /* s * gain, rounded to the nearest sample and saturated to 16 bits */
    for (int32_t i = 0; i < samples; i++) s[i] = vox_sat16((int32_t)(((int64_t)s[i] * gain_q16 + 32768) >> 16));
    samples_seen += samples;
    return samples; /* samples out; 0 swallows the frame */
}

VOX_EVENT {
    switch (kind) {
    case VOX_EVENT_DTMF: { /* arg: the key, '0'-'9', '*', '#', 'A'-'D' */
        char data[64], key = (char)arg;
        vox_text t = vox_text_init(data, sizeof data); /* {"key":"5","samples":1200} */
        vox_text_str(&t, "{\"key\":");
        vox_text_json_strn(&t, &key, 1);
        vox_text_str(&t, ",\"samples\":");
        vox_text_int(&t, samples_seen);
        vox_text_char(&t, '}');
        vox_emit_text("__NAME__.key", &t);
        return VOX_OK;
    }
    case VOX_EVENT_CLEAR: /* barge-in: drop the audio you hold (this plugin holds none) */
        return VOX_OK;
    case VOX_EVENT_FLUSH: /* the input ended: write held samples at vox_samples(), return their count */
        return 0;
    default: /* call start and end, and kinds added later: nothing to do */
        return VOX_OK;
    }
}
