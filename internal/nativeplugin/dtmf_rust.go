//go:build cgo && nativerust

package nativeplugin

/*
#cgo LDFLAGS: ${SRCDIR}/dtmf/target/release/libvoxhost_dtmf_native.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#include "native.h"

// The exports of plugins/dtmf, compiled for the host (dtmf/): their ABI
// names, as the Rust SDK's plugin! macro gives them.
extern int32_t vox_buffer(int32_t), vox_init(int32_t), vox_rate(int32_t), vox_process(int32_t), vox_event(int32_t, int32_t);
extern int16_t *vox_native_buffer(void);

static int64_t dtmf_emits;

// The host functions of the SDK's native-host feature.
void voxhost_log(int32_t level, const char *msg, int32_t len) { (void)level, (void)msg, (void)len; }
void voxhost_emit(const char *name, int32_t name_len, const char *data, int32_t data_len) {
    (void)name, (void)name_len, (void)data, (void)data_len;
    dtmf_emits++;
}

static vox_native_plugin vox_native_dtmf;

// vox_buffer makes the plugin (the SDK's constructor runs on the first
// call) and sizes its buffer: all of it, as the host asks.
static vox_native_plugin *dtmf_native(void) {
    enum { capacity = 16384 };
    if (vox_buffer(capacity) == 0) return 0;
    vox_native_dtmf = (vox_native_plugin){vox_init, vox_rate, vox_process, vox_event, vox_native_buffer(), capacity, &dtmf_emits};
    return &vox_native_dtmf;
}
*/
import "C"

// dtmf (Rust) joins the C builds when voxhost is built with -tags nativerust
// after `make native-rust` has built its static library.
func init() {
	if p := C.dtmf_native(); p != nil {
		builds["dtmf"] = p
	}
}
