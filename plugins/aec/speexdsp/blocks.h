/* SpeexDSP processes fixed blocks; the ABI delivers frames of any length
 * (1 ms steps). blocks_run takes a frame of n samples (and its reference, or
 * 0) and runs fn on whole blocks of `block` samples: in place while every
 * frame is a whole number of blocks (the host's 20 ms frames), and from the
 * first frame that is not, through a queue that delays the audio by one
 * block more, for the rest of the call (so the delay never changes again). */
#ifndef BLOCKS_H
#define BLOCKS_H
#include <stdint.h>

#define BLOCKS_MAX 480 /* 20 ms at 24 kHz */

void blocks_run(int16_t *mic, const int16_t *ref, int32_t n, int block, void (*fn)(int16_t *mic, const int16_t *ref));
#endif
