/* A bump allocator over a static arena, zeroed (speex_alloc's contract is
 * calloc's): see os_support_custom.h. */
#ifndef ARENA_H
#define ARENA_H
void *arena_alloc(int size);
#endif
