// tremolo — the example plugin of every voxhost SDK, in C++17 (examples/TREMOLO.md).
//
// The same plugin as examples/c/tremolo.c, written the C++ way: the state is
// a class, the ABI exports are one-line forwarders to its members. It uses
// the C SDK header unchanged. Freestanding: no exceptions, no RTTI, no
// standard library, no global constructors (the object is constant-initialised).
//
// Config: {"rate_hz": 4, "depth": 0.5} (the defaults; 0.1..20 Hz, 0..1).
// Build:  make            (see the Makefile: clang-14 -std=c++17, one page)

#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

namespace {

// A fixed-capacity string for building an event's JSON without a heap.
template <int32_t Capacity>
class Text {
public:
    Text &operator<<(const char *s) {
        while (*s && len_ < Capacity) buf_[len_++] = *s++;
        return *this;
    }
    Text &operator<<(char c) {
        if (len_ < Capacity) buf_[len_++] = c;
        return *this;
    }
    const char *data() const { return buf_; }
    int32_t size() const { return len_; }

private:
    char buf_[Capacity] = {};
    int32_t len_ = 0;
};

class Tremolo {
public:
    constexpr Tremolo() = default;

    // vox_init: reads and checks the config JSON, config_len bytes at json.
    int32_t configure(const char *json, int32_t len) {
        double rate = 4.0, depth = 0.5;
        // !(a && b) rather than (x < lo || x > hi): also rejects NaN.
        if (!optional_number(json, len, "rate_hz", rate) || !(rate >= 0.1 && rate <= 20.0)) {
            vox_log(VOX_LOG_ERROR, "tremolo: \"rate_hz\" must be a number from 0.1 to 20");
            return VOX_BAD_CONFIG;
        }
        if (!optional_number(json, len, "depth", depth) || !(depth >= 0.0 && depth <= 1.0)) {
            vox_log(VOX_LOG_ERROR, "tremolo: \"depth\" must be a number from 0 to 1");
            return VOX_BAD_CONFIG;
        }
        rate_hz_ = rate;
        depth_q16_ = static_cast<int32_t>(__builtin_floor(depth * 65536.0 + 0.5));
        return VOX_OK;
    }

    // vox_rate: any rate from 8 to 48 kHz, unchanged.
    int32_t set_rate(int32_t input_rate) {
        if (input_rate < 8000 || input_rate > 48000) {
            vox_log(VOX_LOG_ERROR, "tremolo: the input rate must lie between 8000 and 48000 Hz");
            return VOX_BAD_RATE;
        }
        inc_ = static_cast<uint32_t>(__builtin_floor(rate_hz_ * 4294967296.0 / input_rate + 0.5));
        return input_rate;
    }

    // vox_process: n samples in place.
    int32_t process(int16_t *s, int32_t n) {
        uint32_t phase = phase_;
        for (int32_t i = 0; i < n; i++) {
            const uint32_t p = phase >> 16;                                                   // 0 .. 65535
            const int32_t tri = static_cast<int32_t>(p < 32768 ? 2 * p : 2 * (65535 - p)); // 0 .. 65534
            const int32_t g = 65536 - static_cast<int32_t>((int64_t{depth_q16_} * tri) >> 16);
            if (enabled_) s[i] = static_cast<int16_t>((int64_t{s[i]} * g) >> 16);
            phase += inc_;
        }
        phase_ = phase;
        return n;
    }

    // A DTMF key: '#' toggles the effect; every key is reported.
    void key(char digit) {
        if (digit == '#') enabled_ = !enabled_;
        Text<32> json;
        json << "{\"digit\":\"" << digit << "\",\"enabled\":" << (enabled_ ? "true" : "false") << '}';
        vox_host_emit("tremolo.key", 11, json.data(), json.size());
    }

private:
    // True if key is absent (out keeps its default) or holds a number (stored in out).
    static bool optional_number(const char *json, int32_t len, const char *key, double &out) {
        return vox_config_find(json, len, key) < 0 || vox_config_number(json, len, key, &out);
    }

    double rate_hz_ = 4.0;
    int32_t depth_q16_ = 32768;  // floor(0.5 * 65536 + 0.5)
    uint32_t inc_ = 0;           // phase step per sample, set by set_rate
    uint32_t phase_ = 0;         // LFO phase, wraps modulo 2^32
    bool enabled_ = true;
};

// One instance per call, so one object per module instance.
Tremolo tremolo;

}  // namespace

VOX_INIT { return tremolo.configure(vox_bytes(), config_len); }

VOX_RATE { return tremolo.set_rate(input_rate); }

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / 2) return VOX_BAD_LENGTH;
    return tremolo.process(vox_samples(), samples);
}

VOX_EVENT {
    if (kind == VOX_EVENT_DTMF) tremolo.key(static_cast<char>(arg));
    return VOX_OK;  // every other kind: nothing to do
}
