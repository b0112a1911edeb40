#include "blocks.h"

static int queued;                                /* 1 from the first odd frame on */
static int16_t in_mic[BLOCKS_MAX], in_ref[BLOCKS_MAX], out[BLOCKS_MAX];
static int fill, next;                            /* samples in in_*, next of out */
static const int16_t silence[BLOCKS_MAX];

void blocks_run(int16_t *mic, const int16_t *ref, int32_t n, int block, void (*fn)(int16_t *mic, const int16_t *ref)) {
    if (!queued && n % block == 0) {
        for (int32_t off = 0; off < n; off += block) fn(mic + off, ref ? ref + off : silence);
        return;
    }
    if (!queued) {
        queued = 1;
        next = block; /* out holds nothing yet: the first block out is silence */
    }
    for (int32_t i = 0; i < n; i++) {
        in_mic[fill] = mic[i];
        in_ref[fill] = ref ? ref[i] : 0;
        mic[i] = next < block ? out[next++] : 0;
        if (++fill == block) {
            fn(in_mic, in_ref);
            for (int k = 0; k < block; k++) out[k] = in_mic[k];
            fill = next = 0;
        }
    }
}
