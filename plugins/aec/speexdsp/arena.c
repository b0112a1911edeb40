/* The arena of arena.h: 768 KiB, enough for the largest echo canceller the
 * aec plugin's config allows (a 500 ms tail at 16 kHz) with the
 * preprocessor; only the pages a call's states touch cost the host memory. */
#include "arena.h"

#define ARENA_BYTES (768 * 1024)

static unsigned char arena[ARENA_BYTES] __attribute__((aligned(16)));
static int arena_used;

void *arena_alloc(int size) {
    int n = (size + 15) & ~15;
    if (size < 0 || n > ARENA_BYTES - arena_used) return 0;
    void *p = arena + arena_used;
    arena_used += n;
    return p; /* static storage starts zeroed and nothing is ever freed */
}
