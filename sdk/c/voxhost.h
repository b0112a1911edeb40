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

/* ---- generated from abi/abi.go by abi/internal/abigen (go generate ./abi); do not edit ---- */
/* Version is the ABI version this host implements. */
#define VOX_ABI_VERSION 1

/* VersionMarkerPrefix starts the name of the export that declares a plugin's
 * ABI version: a plugin built for ABI v1 exports a function named
 * "voxhost_abi_v1". The host reads the number after the prefix.
 */
#define VOX_VERSION_MARKER_PREFIX "voxhost_abi_v"

/* VersionMarker is the export that marks a plugin as built for this ABI. */
#define VOX_VERSION_MARKER "voxhost_abi_v1"

/* Names of the plugin's exports. */
/* ExportMemory is the plugin's linear memory, where the frame buffer lives. */
#define VOX_EXPORT_MEMORY "memory"
/* ExportBuffer is vox_buffer(capacity_bytes i32) -> ptr i32: the address of a
 * buffer of at least capacity_bytes, owned by the plugin, 2-byte aligned.
 */
#define VOX_EXPORT_BUFFER "vox_buffer"
/* ExportProcess is vox_process(samples i32) -> i32: processes that many
 * PCM16LE samples in place and returns the number of output samples.
 */
#define VOX_EXPORT_PROCESS "vox_process"
/* ExportInit is the optional vox_init(config_len i32) -> i32, called once
 * with the JSON config already written at the start of the buffer.
 */
#define VOX_EXPORT_INIT "vox_init"
/* ExportEvent is the optional vox_event(kind i32, arg i32) -> i32. */
#define VOX_EXPORT_EVENT "vox_event"
/* ExportRate is the optional vox_rate(input_rate i32) -> output_rate i32,
 * through which a plugin declares a sample-rate change.
 */
#define VOX_EXPORT_RATE "vox_rate"
/* ExportReference is the optional vox_reference(capacity_bytes i32) ->
 * ptr i32 of an inbound plugin that asks for the far-end reference (what
 * the caller was sent, time-aligned with the caller's frame; ABI.md §11):
 * a second buffer, which the host fills before every vox_process.
 */
#define VOX_EXPORT_REFERENCE "vox_reference"

/* HostModule is the import module name of the functions the host provides. */
#define VOX_HOST_MODULE "voxhost"

/* Names of the host's functions a plugin may import from HostModule. */
/* ImportLog is log(level i32, ptr i32, len i32): a UTF-8 message for the host log. */
#define VOX_IMPORT_LOG "log"
/* ImportEmit is emit(name_ptr i32, name_len i32, data_ptr i32, data_len i32):
 * an event for the call's client (name: an identifier, data: JSON or empty).
 */
#define VOX_IMPORT_EMIT "emit"

/* Status codes a plugin returns from vox_init, vox_process and vox_event.
 * Zero and positive values are success; a negative value is one of these.
 */
/* StatusOK means success. */
#define VOX_OK 0
/* StatusError is an unspecified failure. */
#define VOX_ERROR (-1)
/* StatusBadConfig means vox_init rejected the configuration. */
#define VOX_BAD_CONFIG (-2)
/* StatusBadRate means the plugin does not accept that sample rate. */
#define VOX_BAD_RATE (-3)
/* StatusBadLength means the plugin does not accept a frame of that length. */
#define VOX_BAD_LENGTH (-4)
/* StatusBadState means the call came out of order (e.g. process before init). */
#define VOX_BAD_STATE (-5)

/* Event kinds the host delivers through vox_event(kind, arg). */
/* EventCallStart: a call began; arg is the length of the call metadata JSON
 * the host wrote at the start of the buffer.
 */
#define VOX_EVENT_CALL_START 1
/* EventCallEnd: the call ended; arg is 0. No further calls follow. */
#define VOX_EVENT_CALL_END 2
/* EventDTMF: the caller pressed a key; arg is its ASCII code (0-9 * # A-D). */
#define VOX_EVENT_DTMF 3
/* EventClear: barge-in; drop any audio the plugin holds. arg is 0. */
#define VOX_EVENT_CLEAR 4
/* EventFlush: the input ended; the plugin may write held samples into its
 * buffer and return their count, which flows downstream as a last frame.
 */
#define VOX_EVENT_FLUSH 5

/* Log levels of the log import. */
#define VOX_LOG_DEBUG 0
#define VOX_LOG_INFO 1
#define VOX_LOG_WARN 2
#define VOX_LOG_ERROR 3

/* Well-known names of events a plugin emits. Plugins may emit others. */
/* EmitClear asks the host to clear the audio queued at the far end
 * (a Twilio "clear"), e.g. when the caller starts speaking over a bot.
 */
#define VOX_EMIT_CLEAR "clear"
/* EmitSpeechStart and EmitSpeechEnd mark voice activity. */
#define VOX_EMIT_SPEECH_START "speech_start"
#define VOX_EMIT_SPEECH_END "speech_end"
/* EmitDTMF reports a detected key; data is the digit as a JSON string. */
#define VOX_EMIT_DTMF "dtmf"

/* Limits the host enforces on what a plugin emits or logs. */
/* MaxEmitNameLen is the longest event name, in bytes. */
#define VOX_MAX_EMIT_NAME_LEN 64
/* MaxEmitDataLen is the longest event payload, in bytes. */
#define VOX_MAX_EMIT_DATA_LEN 4096
/* MaxLogLen is the longest log message kept; longer ones are cut. */
#define VOX_MAX_LOG_LEN 4096

/* SampleBytes is the size of one PCM16LE sample. */
#define VOX_SAMPLE_BYTES 2

/* BufferAlign is the alignment the host requires of the frame buffer address. */
#define VOX_BUFFER_ALIGN 2

/* TelephonyRate is the sample rate of G.711 audio at the edges of a call. */
#define VOX_TELEPHONY_RATE 8000
/* ---- end of the generated constants ---- */

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

/* The far-end reference (ABI section 11): define VOX_WANTS_REFERENCE before
 * including this header with VOXHOST_IMPLEMENTATION and the SDK exports
 * vox_reference; before every vox_process(samples) the host then writes the
 * reference of those samples here: what the caller was sent, time-aligned
 * with the frame, at the same rate; silence when there is none. */
#ifdef VOX_WANTS_REFERENCE
extern int16_t vox_reference_buffer[VOX_BUFFER_BYTES / 2];
static inline const int16_t *vox_reference(void) { return vox_reference_buffer; }
#endif

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

/* Steps through the keys of the top-level object: *pos starts at 0. Returns
 * the next key's length and points *key at it (inside json, escapes as
 * written), or -1 after the last one. */
static inline int32_t vox_config_next_key(const char *json, int32_t len, int32_t *pos, const char **key) {
    int32_t i = *pos, depth = 0;
    if (i == 0) { /* step inside the object */
        while (i < len && json[i] != '{') i++;
        i++;
    }
    while (i < len) {
        char c = json[i];
        if (c == '{' || c == '[') { depth++; i++; continue; }
        if (c == '}' || c == ']') {
            if (depth == 0) break; /* the end of the top-level object */
            depth--;
            i++;
            continue;
        }
        if (c != '"') { i++; continue; }
        int32_t start = ++i;
        while (i < len && json[i] != '"') i += json[i] == '\\' ? 2 : 1;
        int32_t end = i++;
        int32_t j = i;
        while (j < len && vox_json_ws_(json[j])) j++;
        if (depth == 0 && j < len && json[j] == ':') {
            *pos = j + 1;
            *key = json + start;
            return end - start;
        }
    }
    *pos = len;
    return -1;
}

/* Finds key at the top level of a flat JSON object; returns the offset of its value or -1. */
static inline int32_t vox_config_find(const char *json, int32_t len, const char *key) {
    int32_t pos = 0, n, klen = vox_strlen_(key);
    const char *k;
    while ((n = vox_config_next_key(json, len, &pos, &k)) >= 0) {
        int32_t i = 0;
        while (i < n && i < klen && k[i] == key[i]) i++;
        if (i == n && n == klen) {
            while (pos < len && vox_json_ws_(json[pos])) pos++;
            return pos;
        }
    }
    return -1;
}

/* The powers of ten a double holds exactly. */
static const double vox_pow10_[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Reads a number; returns 1 and sets *out if key holds one, else 0.
 * The digits are gathered into an integer and scaled by one exact power of
 * ten, so numbers of up to 15 significant digits with exponents within ±22
 * are read exactly as other JSON parsers (and the other SDKs) read them;
 * longer ones may differ in the last bit. */
static inline int vox_config_number(const char *json, int32_t len, const char *key, double *out) {
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
    v = scale >= 0 ? v * vox_pow10_[scale] : v / vox_pow10_[-scale];
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

/* e^x without libm, within 1 unit in the last place (fdlibm's algorithm,
 * as the Rust and WAT SDKs: x = k ln2 + r with ln 2 in two parts, then a
 * rational approximation of e^r); +inf above 709.78, 0 below -745.13. */
static inline double vox_exp(double x) {
    union { double d; uint64_t u; } p2;
    double hi = x, lo = 0, r, rr, c, y;
    int k = 0;
    if (x != x) return x;
    if (x > 709.782712893383973096) return __builtin_inf();
    if (x < -745.13321910194110842) return 0;
    if (__builtin_fabs(x) < 3.725290298461914e-9) return 1 + x;
    if (__builtin_fabs(x) >= 0.34657359027997264) { /* ln2 / 2 */
        k = (int)(x * 1.44269504088896338700 + (x < 0 ? -0.5 : 0.5));
        hi = x - k * 6.93147180369123816490e-01;
        lo = k * 1.90821492927058770002e-10;
    }
    r = hi - lo;
    rr = r * r;
    c = r - rr * (1.66666666666666019037e-01 + rr * (-2.77777777770155933842e-03 + rr * (6.61375632143793436117e-05 +
        rr * (-1.65339022054652515390e-06 + rr * 4.13813679705723846039e-08))));
    y = 1 + (r * c / (2 - c) - lo + hi);
    if (k > 1023) { y *= 8.98846567431157953865e307; k -= 1023; }  /* 2^1023 */
    if (k < -1022) { y *= 2.22507385850720138309e-308; k += 1022; } /* 2^-1022 */
    p2.u = (uint64_t)(k + 1023) << 52;
    return y * p2.d;
}

/* Converts decibels to a linear amplitude factor: 10^(db/20). */
static inline double vox_db_to_gain(double db) { return vox_exp(db * 0.11512925464970228420); /* ln(10)/20 */ }

/* The natural logarithm, without libm: the exponent from the bits, then
 * 2 atanh((m-1)/(m+1)) for the mantissa m in [sqrt(1/2), sqrt(2)). Within
 * 2 units in the last place; ln(0) = -inf, ln(x < 0) = NaN. */
static inline double vox_ln(double x) {
    union { double d; uint64_t u; } b;
    int e;
    if (!(x > 0)) return x == 0 ? -__builtin_inf() : __builtin_nan("");
    b.d = x;
    e = (int)((b.u >> 52) & 0x7ff);
    if (e == 0x7ff) return x; /* +inf */
    if (e == 0) { /* subnormal: scale by 2^54 first */
        b.d = x * 18014398509481984.0;
        e = (int)((b.u >> 52) & 0x7ff) - 54;
    }
    e -= 1023;
    b.u = (b.u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL; /* m in [1, 2) */
    if (b.d > 1.4142135623730951) { b.d *= 0.5; e++; }
    double z = (b.d - 1.0) / (b.d + 1.0), z2 = z * z, term = z, sum = 0.0;
    for (int k = 1; k < 30; k += 2) { sum += term / k; term *= z2; }
    return (double)e * 6.93147180369123816490e-01 + (2.0 * sum + (double)e * 1.90821492927058770002e-10);
}

/* Converts a linear amplitude factor to decibels: 20 log10(gain); -inf for 0.
 * Levels in dBFS are relative to full scale, 32767: vox_gain_to_db(peak / 32767.0). */
static inline double vox_gain_to_db(double gain) { return vox_ln(gain) * 8.68588963806503655302; /* 20/ln(10) */ }

/* ---- Event data without a heap: vox_text, a string built in a caller's buffer ---- */

/* A string being built in buf (cap bytes, not NUL-terminated). What does not
 * fit sets overflow; vox_emit_text then lets the host drop the event (and
 * count it) rather than send cut-off JSON. */
typedef struct {
    char *buf;
    int32_t cap, len;
    int overflow;
} vox_text;

/* An empty text over buf[0..cap). */
static inline vox_text vox_text_init(char *buf, int32_t cap) {
    vox_text t;
    t.buf = buf;
    t.cap = cap;
    t.len = 0;
    t.overflow = 0;
    return t;
}

/* Appends one byte. */
static inline vox_text *vox_text_char(vox_text *t, char c) {
    if (t->len < t->cap) t->buf[t->len++] = c;
    else t->overflow = 1;
    return t;
}

/* Appends n bytes of s, as they are. */
static inline vox_text *vox_text_strn(vox_text *t, const char *s, int32_t n) {
    for (int32_t i = 0; i < n; i++) vox_text_char(t, s[i]);
    return t;
}

/* Appends a NUL-terminated string, as it is (JSON punctuation, keys, literals). */
static inline vox_text *vox_text_str(vox_text *t, const char *s) {
    while (*s) vox_text_char(t, *s++);
    return t;
}

/* Appends n bytes of s as a JSON string: quoted, with '"', backslash and control
 * characters escaped; other bytes (UTF-8) as they are. */
static inline vox_text *vox_text_json_strn(vox_text *t, const char *s, int32_t n) {
    static const char hex[] = "0123456789abcdef";
    vox_text_char(t, '"');
    for (int32_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') vox_text_char(vox_text_char(t, '\\'), (char)c);
        else if (c == '\n') vox_text_str(t, "\\n");
        else if (c == '\r') vox_text_str(t, "\\r");
        else if (c == '\t') vox_text_str(t, "\\t");
        else if (c < 0x20) vox_text_char(vox_text_char(vox_text_str(t, "\\u00"), hex[c >> 4]), hex[c & 15]);
        else vox_text_char(t, (char)c);
    }
    return vox_text_char(t, '"');
}

/* Appends a NUL-terminated string as a JSON string. */
static inline vox_text *vox_text_json_str(vox_text *t, const char *s) { return vox_text_json_strn(t, s, vox_strlen_(s)); }

/* Appends true or false. */
static inline vox_text *vox_text_bool(vox_text *t, int b) { return vox_text_str(t, b ? "true" : "false"); }

/* Appends v / 10^decimals in decimal with exactly `decimals` digits after the
 * point (0 to 18; none and no point for 0): (-1234, 2) is -12.34, (5, 3) is
 * 0.005. Integer arithmetic only, so every language's SDK writes the same. */
static inline vox_text *vox_text_scaled(vox_text *t, int64_t v, int32_t decimals) {
    char digits[24];
    int32_t n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (decimals < 0) decimals = 0;
    if (decimals > 18) decimals = 18;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0 || n <= decimals);
    if (v < 0) vox_text_char(t, '-');
    while (n > 0) {
        vox_text_char(t, digits[--n]);
        if (n == decimals && n > 0) vox_text_char(t, '.');
    }
    return t;
}

/* Appends an integer in decimal. */
static inline vox_text *vox_text_int(vox_text *t, int64_t v) { return vox_text_scaled(t, v, 0); }

/* Appends v rounded to `decimals` digits after the point (0 to 9), e.g.
 * (-3.14159, 2) is -3.14: r = floor(|v| * 10^decimals + 0.5) in double, then
 * written as vox_text_scaled writes r (with a '-' for v < 0 unless r is 0).
 * NaN, infinities and |v| * 10^decimals >= 1e18 are written as null. The
 * other SDKs' fixed() use the same arithmetic, so they write the same text. */
static inline vox_text *vox_text_fixed(vox_text *t, double v, int32_t decimals) {
    if (decimals < 0) decimals = 0;
    if (decimals > 9) decimals = 9;
    double x = (v < 0 ? -v : v) * vox_pow10_[decimals];
    if (!(x < 1e18)) return vox_text_str(t, "null"); /* NaN too */
    int64_t r = (int64_t)__builtin_floor(x + 0.5);
    return vox_text_scaled(t, v < 0 ? -r : r, decimals);
}

/* Emits an event with the text as its data; an overflowed text is passed
 * with a length the host refuses, so the event is dropped and counted. */
static inline void vox_emit_text(const char *name, const vox_text *t) {
    vox_host_emit(name, vox_strlen_(name), t->buf, t->overflow ? 4097 : t->len);
}

/* Logs the text at level (cut at the capacity if it overflowed). */
static inline void vox_log_text(int32_t level, const vox_text *t) { vox_host_log(level, t->buf, t->len); }

/* ---- Config keys: list them, find the unknown one ---- */

/* Finds the first top-level key that is not in allowed, a list ended by a
 * null pointer: returns its length and points *key at it, or -1 if every
 * key is allowed. A typo'd key then is an error, not silently the default. */
static inline int32_t vox_config_unknown_key(const char *json, int32_t len, const char *const allowed[], const char **key) {
    int32_t pos = 0, n;
    while ((n = vox_config_next_key(json, len, &pos, key)) >= 0) {
        int known = 0;
        for (int32_t a = 0; allowed[a] && !known; a++) {
            int32_t k = 0;
            while (k < n && allowed[a][k] == (*key)[k]) k++;
            known = k == n && allowed[a][k] == 0;
        }
        if (!known) return n;
    }
    return -1;
}

/* The usual use of vox_config_unknown_key in VOX_INIT: returns VOX_OK, or logs
 * `PLUGIN: unknown config key "KEY"` at error level and returns VOX_BAD_CONFIG.
 *   static const char *const keys[] = {"threshold_db", "mode", 0};
 *   if (vox_config_check_keys(vox_bytes(), config_len, "clipper", keys) != VOX_OK) return VOX_BAD_CONFIG; */
static inline int32_t vox_config_check_keys(const char *json, int32_t len, const char *plugin, const char *const allowed[]) {
    const char *key = 0;
    int32_t n = vox_config_unknown_key(json, len, allowed, &key);
    if (n < 0) return VOX_OK;
    char buf[160];
    vox_text t = vox_text_init(buf, sizeof buf);
    vox_text_str(vox_text_str(&t, plugin), ": unknown config key ");
    vox_text_json_strn(&t, key, n);
    vox_log_text(VOX_LOG_ERROR, &t);
    return VOX_BAD_CONFIG;
}

#ifdef VOXHOST_IMPLEMENTATION
int16_t vox_frame_buffer[VOX_BUFFER_BYTES / 2] __attribute__((aligned(16)));

VOX_EXPORT("voxhost_abi_v1") void voxhost_abi_v1(void) {}

VOX_EXPORT("vox_buffer") int32_t vox_buffer(int32_t capacity) {
    return capacity <= (int32_t)sizeof(vox_frame_buffer) ? (int32_t)(uint32_t)vox_frame_buffer : 0;
}

#ifdef VOX_WANTS_REFERENCE
/* Zero: a host that predates the reference never writes it (silence). */
int16_t vox_reference_buffer[VOX_BUFFER_BYTES / 2] __attribute__((aligned(16)));

VOX_EXPORT("vox_reference") int32_t vox_reference_export_(int32_t capacity) {
    return capacity <= (int32_t)sizeof(vox_reference_buffer) ? (int32_t)(uint32_t)vox_reference_buffer : 0;
}
#endif

/* Static constructors (C++ globals whose constructor runs code, C functions
 * marked __attribute__((constructor))) run once, when the host calls
 * _initialize right after instantiation. Calling __wasm_call_ctors here also
 * stops wasm-ld from wrapping every export in a call to it, which would run
 * the constructors again on every vox_process and reset the state. */
void __wasm_call_ctors(void);
VOX_EXPORT("_initialize") void vox_initialize_(void) { __wasm_call_ctors(); }
#endif

#ifdef __cplusplus
}
#endif
#endif
