/*
 * The SDK's implementation part (the frame buffer, vox_buffer, the ABI
 * marker, _initialize), a translation unit of its own that the Makefile links
 * after vad.o: wasm-ld lays .bss out in link order, so the 16 KiB frame buffer
 * comes after the detector's state instead of before it, and the stack, the
 * constants, the state and the head of the buffer (all that a 20 ms frame at
 * up to 24 kHz uses) share one 4 KiB page of memory.
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"
