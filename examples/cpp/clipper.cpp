// clipper — the "every SDK feature" example, in C++17 (examples/CLIPPER.md).
//
// The same plugin as examples/c/clipper.c, the C++ way: the state is a
// class and the exports forward to it. Its one global object has a
// constructor that runs code (it logs; the compiler cannot do that at build
// time), which the SDK's _initialize runs once: without it the threshold
// would be 0, and with wasm-ld's fallback (a constructor call in every
// export) the state would start over on every frame. The conformance test
// would see either, and counts the constructor's log lines.
//
// Config: {"threshold_db": -6, "mode": "hard", "report": true} (the defaults).
// Build:  make            (clang++-14 -std=c++17, freestanding, one page)

#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

namespace {

constexpr int32_t kHold = 16;

// The threshold, in samples, of a level in dBFS.
int32_t threshold_of(double db) { return static_cast<int32_t>(__builtin_floor(32767.0 * vox_db_to_gain(db) + 0.5)); }

class Clipper {
public:
    Clipper() : threshold_(threshold_of(-6.0)) {
        drop_held();
        vox_log(VOX_LOG_DEBUG, "clipper: constructed");
    }

    // vox_init: the config JSON, len bytes at json.
    int32_t configure(const char *json, int32_t len) {
        static const char *const keys[] = {"threshold_db", "mode", "report", nullptr};
        if (vox_config_check_keys(json, len, "clipper", keys) != VOX_OK) return VOX_BAD_CONFIG;
        double db = -6.0;
        if (vox_config_find(json, len, "threshold_db") >= 0 && !vox_config_number(json, len, "threshold_db", &db)) {
            return refuse("clipper: \"threshold_db\" must be a number");
        }
        if (!(db >= -60.0 && db <= 0.0)) return refuse("clipper: \"threshold_db\" must be from -60 to 0");
        if (vox_config_find(json, len, "mode") >= 0) {
            char mode[8];
            const int32_t n = vox_config_string(json, len, "mode", mode, sizeof mode);
            if (n == 4 && equal(mode, "hard")) soft_ = false;
            else if (n == 4 && equal(mode, "soft")) soft_ = true;
            else return refuse("clipper: \"mode\" must be \"hard\" or \"soft\"");
        }
        int report = 1;
        if (vox_config_find(json, len, "report") >= 0 && !vox_config_bool(json, len, "report", &report)) {
            return refuse("clipper: \"report\" must be true or false");
        }
        report_ = report != 0;
        threshold_ = threshold_of(db);
        return VOX_OK;
    }

    int32_t process(int16_t *s, int32_t n) {
        for (int32_t i = 0; i < n; i++) {
            int32_t a = s[i] < 0 ? -int32_t{s[i]} : s[i], x = s[i];
            if (a > peak_) peak_ = a;
            if (a > threshold_) {
                clipped_++;
                a = soft_ ? threshold_ + ((a - threshold_) >> 2) : threshold_;
                x = s[i] < 0 ? -a : a;
            }
            s[i] = ring_[pos_];
            ring_[pos_] = static_cast<int16_t>(x);
            pos_ = (pos_ + 1) % kHold;
            if (held_ < kHold) held_++;
        }
        return n;
    }

    void key(char k) {
        if (report_) stats(&k);
        if (k == '*') clipped_ = peak_ = 0;
    }

    void drop_held() {
        for (int16_t &x : ring_) x = 0;
        pos_ = held_ = 0;
    }

    // Writes the held samples at s, oldest first, reports, and returns their count.
    int32_t flush(int16_t *s) {
        const int32_t n = held_;
        for (int32_t i = 0; i < n; i++) s[i] = ring_[(pos_ + kHold - n + i) % kHold];
        if (report_) stats(nullptr);
        drop_held();
        return n;
    }

private:
    static int32_t refuse(const char *why) {
        vox_log(VOX_LOG_ERROR, why);
        return VOX_BAD_CONFIG;
    }

    static bool equal(const char *a, const char *b) {
        while (*a && *a == *b) a++, b++;
        return *a == *b;
    }

    // clipper.stats {"key":"5","clipped":12,"peak":32768,"peak_dbfs":0.00}; no key is null.
    void stats(const char *key) const {
        char data[96];
        vox_text t = vox_text_init(data, sizeof data);
        vox_text_str(&t, "{\"key\":");
        if (key) vox_text_json_strn(&t, key, 1);
        else vox_text_str(&t, "null");
        vox_text_int(vox_text_str(&t, ",\"clipped\":"), clipped_);
        vox_text_int(vox_text_str(&t, ",\"peak\":"), peak_);
        vox_text_fixed(vox_text_str(&t, ",\"peak_dbfs\":"), vox_gain_to_db(peak_ / 32767.0), 2);
        vox_text_char(&t, '}');
        vox_emit_text("clipper.stats", &t);
    }

    int32_t threshold_;
    bool soft_ = false, report_ = true;
    int64_t clipped_ = 0;
    int32_t peak_ = 0;
    int16_t ring_[kHold];
    int32_t pos_, held_;
};

// One instance per call, so one object per module instance.
Clipper clipper;

}  // namespace

VOX_INIT { return clipper.configure(vox_bytes(), config_len); }

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / 2) return VOX_BAD_LENGTH;
    return clipper.process(vox_samples(), samples);
}

VOX_EVENT {
    switch (kind) {
    case VOX_EVENT_DTMF:
        clipper.key(static_cast<char>(arg));
        return VOX_OK;
    case VOX_EVENT_CLEAR:
        clipper.drop_held();
        return VOX_OK;
    case VOX_EVENT_FLUSH:
        return clipper.flush(vox_samples());
    default:
        return VOX_OK;
    }
}
