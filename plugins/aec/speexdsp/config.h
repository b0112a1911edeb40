/* What speexdsp's configure would write for this build: single-precision
 * floating point (wasm32 has it in hardware; the fixed-point build is for
 * DSPs without an FPU), its own FFT (smallft, as Debian's package uses),
 * no symbol visibility games, and the allocator and messages of
 * os_support_custom.h instead of libc's. */
#define FLOATING_POINT 1
#define USE_SMALLFT 1
#define EXPORT
#define OS_SUPPORT_CUSTOM 1
