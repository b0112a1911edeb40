//go:build webrtcvad

// Package webrtcvad runs WebRTC's voice activity detector from Debian's
// libwebrtc-audio-processing (apt: libwebrtc-audio-processing-dev), the
// reference the stock vad plugin is measured against. Only the
// benchmark's build tag (webrtcvad) compiles it, so plain go test and the
// host need neither cgo nor the library. The package installs no header
// for the VAD, so its functions are declared here as the library exports
// them.
package webrtcvad

/*
#cgo pkg-config: webrtc-audio-processing
#include <stdint.h>
#include <stddef.h>
typedef struct WebRtcVadInst VadInst;
VadInst* WebRtcVad_Create(void);
void WebRtcVad_Free(VadInst* handle);
int WebRtcVad_Init(VadInst* handle);
int WebRtcVad_set_mode(VadInst* handle, int mode);
int WebRtcVad_Process(VadInst* handle, int fs, const int16_t* audio_frame, size_t frame_length);
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// VAD is one WebRTC VAD instance.
type VAD struct {
	inst *C.VadInst
	rate int
}

// New returns a detector at rate Hz (8000, 16000, 32000 or 48000) in mode
// 0 (least aggressive) to 3 (most aggressive about calling audio non-speech).
func New(rate, mode int) (*VAD, error) {
	inst := C.WebRtcVad_Create()
	if inst == nil {
		return nil, errors.New("webrtcvad: WebRtcVad_Create failed")
	}
	if C.WebRtcVad_Init(inst) != 0 || C.WebRtcVad_set_mode(inst, C.int(mode)) != 0 {
		C.WebRtcVad_Free(inst)
		return nil, fmt.Errorf("webrtcvad: mode %d refused", mode)
	}
	return &VAD{inst: inst, rate: rate}, nil
}

// Close frees the instance.
func (v *VAD) Close() { C.WebRtcVad_Free(v.inst) }

// Speech classifies one frame of 10, 20 or 30 ms of samples.
func (v *VAD) Speech(frame []int16) (bool, error) {
	r := C.WebRtcVad_Process(v.inst, C.int(v.rate), (*C.int16_t)(unsafe.Pointer(&frame[0])), C.size_t(len(frame)))
	if r < 0 {
		return false, fmt.Errorf("webrtcvad: %d samples at %d Hz refused", len(frame), v.rate)
	}
	return r == 1, nil
}
