//go:build cgo

// Package refresample runs the field's resamplers, libsoxr and SpeexDSP's
// (Debian's libsoxr-dev and libspeexdsp-dev, through cgo), so that the
// stock resample plugin's tests measure it beside them on the same input.
// It is test support: nothing in the host imports it.
package refresample

/*
#cgo LDFLAGS: -lsoxr -lspeexdsp
#include <stdlib.h>
#include <soxr.h>
#include <speex/speex_resampler.h>

static const char *soxr_int16(const short *in, size_t n, double from, double to,
                              unsigned long recipe, short *out, size_t cap, size_t *done) {
    soxr_io_spec_t io = soxr_io_spec(SOXR_INT16_I, SOXR_INT16_I);
    io.flags |= SOXR_NO_DITHER;
    soxr_quality_spec_t q = soxr_quality_spec(recipe, 0);
    return soxr_oneshot(from, to, 1, in, n, NULL, out, cap, done, &io, &q, NULL);
}

static int speex_int16(const short *in, unsigned n, unsigned from, unsigned to, int quality,
                       short *out, unsigned cap, unsigned *done) {
    int err = 0;
    SpeexResamplerState *st = speex_resampler_init(1, from, to, quality, &err);
    if (!st) return err ? err : -1;
    speex_resampler_skip_zeros(st);
    spx_uint32_t in_len = n, out_len = cap;
    err = speex_resampler_process_int(st, 0, in, &in_len, out, &out_len);
    *done = out_len;
    speex_resampler_destroy(st);
    return err;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// SoxrQuality is a libsoxr quality recipe.
type SoxrQuality uint

// The recipes the tests compare with: soxr's default, 'high quality' (20
// bits), and 'very high quality' (28 bits).
const (
	SoxrHQ  SoxrQuality = C.SOXR_HQ
	SoxrVHQ SoxrQuality = C.SOXR_VHQ
)

// Soxr resamples 16-bit samples from one rate to another in one shot with
// libsoxr, undithered, and returns the 16-bit output (soxr removes its own
// delay, so output sample i lies at input time i × from / to).
func Soxr(in []int16, from, to int, q SoxrQuality) ([]int16, error) {
	if len(in) == 0 {
		return nil, errors.New("refresample: no input")
	}
	out := make([]int16, len(in)*to/from+64)
	var done C.size_t
	msg := C.soxr_int16((*C.short)(unsafe.Pointer(&in[0])), C.size_t(len(in)), C.double(from), C.double(to),
		C.ulong(q), (*C.short)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &done)
	if msg != nil {
		return nil, fmt.Errorf("soxr: %s", C.GoString(msg))
	}
	return out[:done], nil
}

// Speex resamples 16-bit samples with SpeexDSP's resampler at quality 0..10
// (10 is its best), its leading zeros skipped, and returns what it produced
// from the input (its tail, the filter's delay, stays inside).
func Speex(in []int16, from, to, quality int) ([]int16, error) {
	if len(in) == 0 {
		return nil, errors.New("refresample: no input")
	}
	out := make([]int16, len(in)*to/from+64)
	var done C.uint
	if err := C.speex_int16((*C.short)(unsafe.Pointer(&in[0])), C.uint(len(in)), C.uint(from), C.uint(to), C.int(quality),
		(*C.short)(unsafe.Pointer(&out[0])), C.uint(len(out)), &done); err != 0 {
		return nil, fmt.Errorf("speexdsp resampler: error %d", int(err))
	}
	return out[:done], nil
}
