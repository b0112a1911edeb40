/*
 * tremolo — the example plugin of every voxhost SDK, in C (examples/TREMOLO.md).
 *
 * The gain swells and dips rate_hz times a second, by up to depth of full
 * scale. The LFO is a 32-bit phase accumulator read as a triangle, and all
 * per-sample arithmetic is integer, so every language's build produces the
 * same bits. The key '#' toggles the effect; every key is reported to the
 * client as the event tremolo.key.
 *
 * Config: {"rate_hz": 4, "depth": 0.5} (the defaults; 0.1..20 Hz, 0..1).
 * Build:  make            (see the Makefile: clang-14, no libc, one page)
 * Try:    go run ./cmd/voxhost run --pipeline "examples/c/build/tremolo.wasm rate_hz=5 depth=0.8" in.wav out.wav
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

/* Configuration, set by vox_init. */
static double rate_hz = 4.0;
static int32_t depth_q16 = 32768; /* floor(0.5 * 65536 + 0.5) */

/* State of the call. */
static uint32_t inc;       /* phase step per sample, set by vox_rate */
static uint32_t phase;     /* LFO phase, wraps modulo 2^32 */
static int enabled = 1;    /* '#' toggles it */

/*
 * Reads an optional number: returns 1 if key is absent (*out keeps its
 * default) or holds a number (stored in *out), 0 if it holds anything else.
 */
static int optional_number(int32_t len, const char *key, double *out) {
    if (vox_config_find(vox_bytes(), len, key) < 0) return 1;
    return vox_config_number(vox_bytes(), len, key, out);
}

VOX_INIT {
    double rate = 4.0, depth = 0.5;
    /* !(a && b) rather than (x < lo || x > hi): also rejects NaN. */
    if (!optional_number(config_len, "rate_hz", &rate) || !(rate >= 0.1 && rate <= 20.0)) {
        vox_log(VOX_LOG_ERROR, "tremolo: \"rate_hz\" must be a number from 0.1 to 20");
        return VOX_BAD_CONFIG;
    }
    if (!optional_number(config_len, "depth", &depth) || !(depth >= 0.0 && depth <= 1.0)) {
        vox_log(VOX_LOG_ERROR, "tremolo: \"depth\" must be a number from 0 to 1");
        return VOX_BAD_CONFIG;
    }
    rate_hz = rate;
    /* __builtin_floor is the f64.floor instruction: no libm needed. */
    depth_q16 = (int32_t)__builtin_floor(depth * 65536.0 + 0.5);
    return VOX_OK;
}

VOX_RATE {
    if (input_rate < 8000 || input_rate > 48000) {
        vox_log(VOX_LOG_ERROR, "tremolo: the input rate must lie between 8000 and 48000 Hz");
        return VOX_BAD_RATE;
    }
    inc = (uint32_t)__builtin_floor(rate_hz * 4294967296.0 / (double)input_rate + 0.5);
    return input_rate; /* the rate does not change */
}

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / 2) return VOX_BAD_LENGTH;
    int16_t *s = vox_samples();
    uint32_t ph = phase;
    for (int32_t i = 0; i < samples; i++) {
        uint32_t p = ph >> 16;                                        /* 0 .. 65535 */
        int32_t tri = (int32_t)(p < 32768 ? 2 * p : 2 * (65535 - p)); /* 0 .. 65534 */
        int32_t g = 65536 - (int32_t)(((int64_t)depth_q16 * tri) >> 16);
        if (enabled) s[i] = (int16_t)(((int64_t)s[i] * g) >> 16);
        ph += inc;
    }
    phase = ph;
    return samples;
}

/*
 * The two forms of the event's data; the digit goes at offset 10. Static
 * buffers patched in place rather than a string built on the stack: with no
 * libc there is no memcpy, which the compiler would call to copy a template.
 */
static char key_on[] = "{\"digit\":\"?\",\"enabled\":true}";
static char key_off[] = "{\"digit\":\"?\",\"enabled\":false}";

VOX_EVENT {
    if (kind != VOX_EVENT_DTMF) return VOX_OK; /* every other kind: nothing to do */
    if (arg == '#') enabled = !enabled;
    char *data = enabled ? key_on : key_off;
    data[10] = (char)arg;
    vox_emit("tremolo.key", data);
    return VOX_OK;
}
