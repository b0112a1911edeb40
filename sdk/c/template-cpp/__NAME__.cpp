// __NAME__: a voxhost plugin in C++, made by `voxhost plugin new --lang cpp`.
//
// It changes the volume by gain_db decibels and reports every DTMF key as
// the event __NAME__.key. The state is a class; the ABI exports at the end
// forward to it. Keep what you need and replace the processing.
// voxhost/README.md documents the SDK (its C++ section: what works without a
// C++ runtime), voxhost/voxhost.h is all of it.
//
// Config: {"gain_db": -6} (the default; -60 to 20). Any other key is refused.
// Build:  make        Check: make test        Hear: make run CONFIG="gain_db=-12"

#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"

namespace {

// The gain in Q16 (65536 = 1.0) of a level in dB.
int32_t q16(double db) { return static_cast<int32_t>(__builtin_floor(vox_db_to_gain(db) * 65536.0 + 0.5)); }

class __TYPE__ {
public:
    // Runs once, when the host calls _initialize (the SDK's): a constructor
    // may run code, here the dB conversion of the default.
    __TYPE__() : gain_q16_(q16(-6.0)) {}

    // vox_init: the config, a JSON object of len bytes at json.
    int32_t configure(const char *json, int32_t len) {
        static const char *const keys[] = {"gain_db", nullptr};
        // A typo'd key is an error, not silently the default.
        if (vox_config_check_keys(json, len, "__NAME__", keys) != VOX_OK) return VOX_BAD_CONFIG;
        double db = -6.0;
        if (vox_config_find(json, len, "gain_db") >= 0 && !vox_config_number(json, len, "gain_db", &db)) {
            vox_log(VOX_LOG_ERROR, "__NAME__: \"gain_db\" must be a number");
            return VOX_BAD_CONFIG;
        }
        if (!(db >= -60.0 && db <= 20.0)) {  // written so that NaN fails too
            vox_log(VOX_LOG_ERROR, "__NAME__: \"gain_db\" must be from -60 to 20");
            return VOX_BAD_CONFIG;
        }
        gain_q16_ = q16(db);
        return VOX_OK;
    }

    // vox_process: n samples in place.
    int32_t process(int16_t *s, int32_t n) {
        for (int32_t i = 0; i < n; i++) s[i] = vox_sat16(static_cast<int32_t>((int64_t{s[i]} * gain_q16_ + 32768) >> 16));
        samples_seen_ += n;
        return n;  // samples out; 0 swallows the frame
    }

    // A DTMF key: the event {"key":"5","samples":1200}.
    void key(char k) const {
        char data[64];
        vox_text t = vox_text_init(data, sizeof data);
        vox_text_str(&t, "{\"key\":");
        vox_text_json_strn(&t, &k, 1);
        vox_text_str(&t, ",\"samples\":");
        vox_text_int(&t, samples_seen_);
        vox_text_char(&t, '}');
        vox_emit_text("__NAME__.key", &t);
    }

private:
    int32_t gain_q16_;
    int64_t samples_seen_ = 0;
};

// One instance per call, so one object per module instance.
__TYPE__ plugin;

}  // namespace

VOX_INIT { return plugin.configure(vox_bytes(), config_len); }

VOX_PROCESS {
    if (samples <= 0 || samples > VOX_BUFFER_BYTES / 2) return VOX_BAD_LENGTH;
    return plugin.process(vox_samples(), samples);
}

VOX_EVENT {
    switch (kind) {
    case VOX_EVENT_DTMF:  // arg: the key, '0'-'9', '*', '#', 'A'-'D'
        plugin.key(static_cast<char>(arg));
        return VOX_OK;
    case VOX_EVENT_FLUSH:  // the input ended: write held samples at vox_samples(), return their count
        return 0;
    default:  // call start and end, clear (this plugin holds no audio), kinds added later
        return VOX_OK;
    }
}
