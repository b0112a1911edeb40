/* speexdsp's allocation and messages (os_support.h), for a plugin: the
 * states of one call are allocated once, at set-up, and live as long as
 * the instance, so a bump allocator over a static arena serves them (no
 * malloc, no free list; speex_free is a no-op). An arena too small traps
 * (arena.c): SpeexDSP does not check what speex_alloc returns.
 * Warnings and errors go nowhere: the plugin validates what it passes. */
#include "arena.h"

#define OVERRIDE_SPEEX_ALLOC
static inline void *speex_alloc(int size) { return arena_alloc(size); }
#define OVERRIDE_SPEEX_ALLOC_SCRATCH
static inline void *speex_alloc_scratch(int size) { return arena_alloc(size); }
#define OVERRIDE_SPEEX_REALLOC
static inline void *speex_realloc(void *ptr, int size) { (void)ptr; (void)size; return 0; }
#define OVERRIDE_SPEEX_FREE
static inline void speex_free(void *ptr) { (void)ptr; }
#define OVERRIDE_SPEEX_FREE_SCRATCH
static inline void speex_free_scratch(void *ptr) { (void)ptr; }
#define OVERRIDE_SPEEX_FATAL
static inline void _speex_fatal(const char *str, const char *file, int line) { (void)str; (void)file; (void)line; __builtin_trap(); }
#define OVERRIDE_SPEEX_WARNING
static inline void speex_warning(const char *str) { (void)str; }
#define OVERRIDE_SPEEX_WARNING_INT
static inline void speex_warning_int(const char *str, int val) { (void)str; (void)val; }
#define OVERRIDE_SPEEX_NOTIFY
static inline void speex_notify(const char *str) { (void)str; }
#define OVERRIDE_SPEEX_PUTC
static inline void _speex_putc(int ch, void *file) { (void)ch; (void)file; }
