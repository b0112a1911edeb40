/*
 * voxhost.h — the voxhost plugin ABI v1 for C99 and C++ (see abi/ABI.md).
 *
 * Header-only and freestanding: no libc needed. In exactly one translation
 * unit, define VOXHOST_IMPLEMENTATION before including it; that unit then
 * holds the ABI version marker and the frame buffer (vox_buffer). The author
 * writes vox_process and, optionally, vox_init, vox_rate and vox_event, each
 * opened with its macro so that its export name and type match the ABI:
 *
 *   #define VOXHOST_IMPLEMENTATION
 *   #include "voxhost.h"
 *   VOX_PROCESS {                      // int32_t vox_process(int32_t samples)
 *       int16_t *s = vox_samples();
 *       ...process s[0..samples) in place...
 *       return samples;
 *   }
 *
 * Build (clang-14, wasm-ld):
 *   clang-14 --target=wasm32 -nostdlib -O2 -I sdk/c \
 *     -Wl,--no-entry -Wl,--initial-memory=65536 -Wl,--max-memory=65536 \
 *     -Wl,-z,stack-size=8192 -o plugin.wasm plugin.c
 */
#ifndef VOXHOST_H
#define VOXHOST_H

#ifdef __cplusplus
extern "C" {
#endif

/* Freestanding: the fixed-width types come from the compiler, not libc. */
#if !defined(INT16_MAX)
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT64_TYPE__ uint64_t;
#endif

#define VOX_ABI_VERSION 1

/* Status codes (negative results of vox_init, vox_process, vox_event). */
#define VOX_OK 0
#define VOX_ERROR (-1)
#define VOX_BAD_CONFIG (-2)
#define VOX_BAD_RATE (-3)
#define VOX_BAD_LENGTH (-4)
#define VOX_BAD_STATE (-5)

/* Event kinds delivered to vox_event(kind, arg). */
#define VOX_EVENT_CALL_START 1
#define VOX_EVENT_CALL_END 2
#define VOX_EVENT_DTMF 3
#define VOX_EVENT_CLEAR 4
#define VOX_EVENT_FLUSH 5

/* Log levels of vox_log. */
#define VOX_LOG_DEBUG 0
#define VOX_LOG_INFO 1
#define VOX_LOG_WARN 2
#define VOX_LOG_ERROR 3

/* Marks a function as an export of the plugin under the given name. */
#define VOX_EXPORT(name) __attribute__((export_name(name), visibility("default")))
#define VOX_IMPORT(name) __attribute__((import_module("voxhost"), import_name(name)))

/* Openers of the plugin's own exports: VOX_PROCESS { ... return samples; } */
#define VOX_PROCESS VOX_EXPORT("vox_process") int32_t vox_process(int32_t samples)
#define VOX_INIT VOX_EXPORT("vox_init") int32_t vox_init(int32_t config_len)
#define VOX_RATE VOX_EXPORT("vox_rate") int32_t vox_rate(int32_t input_rate)
#define VOX_EVENT VOX_EXPORT("vox_event") int32_t vox_event(int32_t kind, int32_t arg)

/* Host imports. */
VOX_IMPORT("log") void vox_host_log(int32_t level, const char *msg, int32_t len);
VOX_IMPORT("emit") void vox_host_emit(const char *name, int32_t name_len, const char *data, int32_t data_len);

/* Capacity of the static frame buffer; define before including to change. */
#ifndef VOX_BUFFER_BYTES
#define VOX_BUFFER_BYTES 16384
#endif

extern int16_t vox_frame_buffer[VOX_BUFFER_BYTES / 2];

/* The frame's samples: vox_process works on them in place. */
static inline int16_t *vox_samples(void) { return vox_frame_buffer; }

/* The buffer as bytes: where vox_init finds its JSON config. */
static inline const char *vox_bytes(void) { return (const char *)vox_frame_buffer; }

static inline int32_t vox_strlen_(const char *s) {
    int32_t n = 0;
    while (s[n]) n++;
    return n;
}

/* Logs a NUL-terminated message. */
static inline void vox_log(int32_t level, const char *msg) { vox_host_log(level, msg, vox_strlen_(msg)); }

/* Emits an event; data is a JSON value ("" for none). */
static inline void vox_emit(const char *name, const char *data) {
    vox_host_emit(name, vox_strlen_(name), data, vox_strlen_(data));
}

/* Saturates a wide sample to 16 bits. */
static inline int16_t vox_sat16(int32_t v) { return (int16_t)(v > 32767 ? 32767 : v < -32768 ? -32768 : v); }

/* ---- Flat JSON config helpers: {"key": number | "string" | true | false | null, ...} ---- */

static inline int vox_json_ws_(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Finds key at the top level of a flat JSON object; returns the offset of its value or -1. */
static inline int32_t vox_config_find(const char *json, int32_t len, const char *key) {
    int32_t i = 0, depth = 0;
    int32_t klen = vox_strlen_(key);
    while (i < len) {
        char c = json[i];
        if (c == '{' || c == '[') { depth++; i++; continue; }
        if (c == '}' || c == ']') { depth--; i++; continue; }
        if (c != '"') { i++; continue; }
        int32_t start = ++i;
        while (i < len && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
        int32_t end = i++;
        int32_t j = i;
        while (j < len && vox_json_ws_(json[j])) j++;
        if (j >= len || json[j] != ':') { continue; } /* a string value, not a key */
        j++;
        while (j < len && vox_json_ws_(json[j])) j++;
        if (depth == 1 && end - start == klen) {
            int32_t k = 0;
            while (k < klen && json[start + k] == key[k]) k++;
            if (k == klen) return j;
        }
        i = j;
    }
    return -1;
}

/* Reads a number; returns 1 and sets *out if key holds one, else 0.
 * The digits are gathered into an integer and scaled by one exact power of
 * ten, so numbers of up to 15 significant digits with exponents within ±22
 * are read exactly as other JSON parsers (and the other SDKs) read them;
 * longer ones may differ in the last bit. */
static inline int vox_config_number(const char *json, int32_t len, const char *key, double *out) {
    static const double pow10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int32_t i = vox_config_find(json, len, key);
    if (i < 0) return 0;
    int negative = 0, digits = 0, scale = 0, exp = 0, esign = 1;
    uint64_t mantissa = 0;
    if (i < len && (json[i] == '-' || json[i] == '+')) { negative = json[i] == '-'; i++; }
    for (int fraction = 0; i < len; i++) {
        if (json[i] == '.' && !fraction) { fraction = 1; continue; }
        if (json[i] < '0' || json[i] > '9') break;
        if (mantissa < 100000000000000000ULL) {
            mantissa = mantissa * 10 + (uint64_t)(json[i] - '0');
            scale -= fraction;
        } else if (!fraction) {
            scale++; /* digits beyond 17 significant ones only scale */
        }
        digits++;
    }
    if (!digits) return 0;
    if (i < len && (json[i] == 'e' || json[i] == 'E')) {
        i++;
        if (i < len && (json[i] == '-' || json[i] == '+')) { esign = json[i] == '-' ? -1 : 1; i++; }
        while (i < len && json[i] >= '0' && json[i] <= '9' && exp < 10000) exp = exp * 10 + (json[i++] - '0');
    }
    scale += esign * exp;
    double v = (double)mantissa;
    while (scale > 22) { v *= 1e22; scale -= 22; }
    while (scale < -22) { v /= 1e22; scale += 22; }
    v = scale >= 0 ? v * pow10[scale] : v / pow10[-scale];
    *out = negative ? -v : v;
    return 1;
}

/* Reads a boolean; returns 1 and sets *out if key holds true or false, else 0. */
static inline int vox_config_bool(const char *json, int32_t len, const char *key, int *out) {
    int32_t i = vox_config_find(json, len, key);
    if (i < 0 || i + 4 > len) return 0;
    if (json[i] == 't' && json[i + 1] == 'r' && json[i + 2] == 'u' && json[i + 3] == 'e') { *out = 1; return 1; }
    if (i + 5 <= len && json[i] == 'f' && json[i + 1] == 'a' && json[i + 2] == 'l' && json[i + 3] == 's' && json[i + 4] == 'e') { *out = 0; return 1; }
    return 0;
}

/* Copies a string value (escapes other than \" and \\ kept as-is) into out, NUL-terminated.
 * Returns its length, or -1 if key is absent, not a string, or does not fit. */
static inline int32_t vox_config_string(const char *json, int32_t len, const char *key, char *out, int32_t cap) {
    int32_t i = vox_config_find(json, len, key), n = 0;
    if (i < 0 || json[i] != '"') return -1;
    for (i++; i < len && json[i] != '"'; i++) {
        if (json[i] == '\\' && i + 1 < len) i++;
        if (n + 1 >= cap) return -1;
        out[n++] = json[i];
    }
    if (i >= len) return -1;
    out[n] = 0;
    return n;
}

/* e^x in double precision, without libm: range reduction by ln 2, then Taylor. */
static inline double vox_exp(double x) {
    const double ln2 = 0.69314718055994530942;
    int k = (int)(x / ln2 + (x < 0 ? -0.5 : 0.5));
    double r = x - k * ln2, term = 1, sum = 1;
    for (int n = 1; n < 20; n++) { term *= r / n; sum += term; }
    while (k > 0) { sum *= 2; k--; }
    while (k < 0) { sum /= 2; k++; }
    return sum;
}

/* Converts decibels to a linear amplitude factor: 10^(db/20). */
static inline double vox_db_to_gain(double db) { return vox_exp(db * 0.11512925464970228420); /* ln(10)/20 */ }

#ifdef VOXHOST_IMPLEMENTATION
int16_t vox_frame_buffer[VOX_BUFFER_BYTES / 2] __attribute__((aligned(16)));

VOX_EXPORT("voxhost_abi_v1") void voxhost_abi_v1(void) {}

VOX_EXPORT("vox_buffer") int32_t vox_buffer(int32_t capacity) {
    return capacity <= (int32_t)sizeof(vox_frame_buffer) ? (int32_t)(uint32_t)vox_frame_buffer : 0;
}
#endif

#ifdef __cplusplus
}
#endif
#endif
