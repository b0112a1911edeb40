/*
 * The C SDK's implementation part (the frame buffer, vox_buffer, the ABI
 * marker, _initialize) for the plugins c-stock.mk builds: a translation unit
 * of its own, linked after the plugin's, because wasm-ld lays .bss out in
 * link order; so the 16 KiB frame buffer comes after the plugin's state and
 * the stack, the constants, the state and the head of the buffer share as
 * few 4 KiB pages as they can.
 */
#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"
