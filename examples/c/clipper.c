/*
 * clipper — the "every SDK feature" example, in C (examples/CLIPPER.md).
 *
 * A peak limiter with a 16-sample lookahead: a config with a number, a
 * string and a boolean and no unknown keys, dB both ways, an event with
 * integers and a fixed-point decimal, a DTMF reset, held audio that clear
 * drops and flush releases.
 *
 * Config: {"threshold_db": -6, "mode": "hard", "report": true} (the defaults).
 * Build:  make            (clang-14, no libc, one page)
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

#define HOLD 16

/* Configuration, set by vox_init. */
static int32_t threshold = 16422; /* floor(32767 * 10^(-6/20) + 0.5) */
static int soft;
static int report = 1;

/* State of the call. */
static int64_t clipped;
static int32_t peak;
static int16_t ring[HOLD];
static int32_t pos, held;

VOX_INIT {
    static const char *const keys[] = {"threshold_db", "mode", "report", 0};
    const char *json = vox_bytes();
    double db = -6.0;
    char mode[8];
    if (vox_config_check_keys(json, config_len, "clipper", keys) != VOX_OK) return VOX_BAD_CONFIG;
    if (vox_config_find(json, config_len, "threshold_db") >= 0 &&
        !vox_config_number(json, config_len, "threshold_db", &db)) {
        vox_log(VOX_LOG_ERROR, "clipper: \"threshold_db\" must be a number");
        return VOX_BAD_CONFIG;
    }
    if (!(db >= -60.0 && db <= 0.0)) {
        vox_log(VOX_LOG_ERROR, "clipper: \"threshold_db\" must be from -60 to 0");
        return VOX_BAD_CONFIG;
    }
    if (vox_config_find(json, config_len, "mode") >= 0) {
        int32_t n = vox_config_string(json, config_len, "mode", mode, sizeof mode);
        int is_hard = n == 4 && mode[0] == 'h' && mode[1] == 'a' && mode[2] == 'r' && mode[3] == 'd';
        int is_soft = n == 4 && mode[0] == 's' && mode[1] == 'o' && mode[2] == 'f' && mode[3] == 't';
        if (!is_hard && !is_soft) {
            vox_log(VOX_LOG_ERROR, "clipper: \"mode\" must be \"hard\" or \"soft\"");
            return VOX_BAD_CONFIG;
        }
        soft = is_soft;
    }
    if (vox_config_find(json, config_len, "report") >= 0 && !vox_config_bool(json, config_len, "report", &report)) {
        vox_log(VOX_LOG_ERROR, "clipper: \"report\" must be true or false");
        return VOX_BAD_CONFIG;
    }
    threshold = (int32_t)__builtin_floor(32767.0 * vox_db_to_gain(db) + 0.5);
    return VOX_OK;
}

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / 2) return VOX_BAD_LENGTH;
    int16_t *s = vox_samples();
    for (int32_t i = 0; i < samples; i++) {
        int32_t a = s[i] < 0 ? -(int32_t)s[i] : s[i], x = s[i];
        if (a > peak) peak = a;
        if (a > threshold) {
            clipped++;
            a = soft ? threshold + ((a - threshold) >> 2) : threshold;
            x = s[i] < 0 ? -a : a;
        }
        s[i] = ring[pos];
        ring[pos] = (int16_t)x;
        pos = (pos + 1) % HOLD;
        if (held < HOLD) held++;
    }
    return samples;
}

/* clipper.stats {"key":"5","clipped":12,"peak":32768,"peak_dbfs":0.00}; key 0 is null. */
static void stats(char key) {
    char data[96];
    vox_text t = vox_text_init(data, sizeof data);
    vox_text_str(&t, "{\"key\":");
    if (key) vox_text_json_strn(&t, &key, 1);
    else vox_text_str(&t, "null");
    vox_text_int(vox_text_str(&t, ",\"clipped\":"), clipped);
    vox_text_int(vox_text_str(&t, ",\"peak\":"), peak);
    vox_text_fixed(vox_text_str(&t, ",\"peak_dbfs\":"), vox_gain_to_db(peak / 32767.0), 2);
    vox_text_char(&t, '}');
    vox_emit_text("clipper.stats", &t);
}

static void drop_held(void) {
    for (int32_t i = 0; i < HOLD; i++) ring[i] = 0;
    pos = held = 0;
}

VOX_EVENT {
    switch (kind) {
    case VOX_EVENT_DTMF:
        if (report) stats((char)arg);
        if (arg == '*') clipped = peak = 0;
        return VOX_OK;
    case VOX_EVENT_CLEAR:
        drop_held();
        return VOX_OK;
    case VOX_EVENT_FLUSH: {
        int16_t *s = vox_samples();
        int32_t n = held;
        for (int32_t i = 0; i < n; i++) s[i] = ring[(pos + HOLD - n + i) % HOLD];
        if (report) stats(0);
        drop_held();
        return n;
    }
    default:
        return VOX_OK;
    }
}
