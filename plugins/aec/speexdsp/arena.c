/* The arena of arena.h: 1.5 MiB, enough for the largest echo canceller the
 * aec plugin allows (8000 taps: a 500 ms tail at 16 kHz, 333 ms at 24 kHz)
 * with the preprocessor; only the pages a call's states touch cost the host
 * memory. SpeexDSP does not check its allocations, so running out traps
 * (in vox_rate, where the states are made: a failed set-up, not a state
 * written over address 0). */
#include "arena.h"

#define ARENA_BYTES (1536 * 1024)

static unsigned char arena[ARENA_BYTES] __attribute__((aligned(16)));
static int arena_used;

void *arena_alloc(int size) {
    int n = (size + 15) & ~15;
    if (size < 0 || n > ARENA_BYTES - arena_used) __builtin_trap();
    void *p = arena + arena_used;
    arena_used += n;
    return p; /* static storage starts zeroed and nothing is ever freed */
}
