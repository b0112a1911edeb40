// The frame buffer (ABI §6) and the two exports every plugin takes from the
// SDK unchanged: the ABI version marker and vox_buffer.

import { SampleBytes } from "./abi";

/**
 * Capacity of the static frame buffer in bytes: 16384 (8192 samples), or the
 * value given to the compiler with `--use VOX_BUFFER_BYTES=N` (a multiple of
 * 16). The reference host asks for 1600 bytes in an 8 kHz chain and 9600 at
 * 48 kHz (100 ms frames).
 */
// @ts-ignore: VOX_BUFFER_BYTES is a compile-time constant that asc --use may define.
export const BufferBytes: i32 = isDefined(VOX_BUFFER_BYTES) ? VOX_BUFFER_BYTES : 16384;

/** Capacity of the frame buffer in samples. */
export const BufferSamples: i32 = BufferBytes / SampleBytes;

/**
 * Address of the frame buffer: a 16-byte aligned region of BufferBytes that
 * nothing else uses, taken from the heap by the first vox_buffer call (the
 * ABI's first call; 0 before it). The host writes the config (vox_init), the
 * call metadata (call_start) and each frame (vox_process) here.
 *
 * Why the heap: only the 4 KiB OS pages a plugin touches cost the host
 * memory, and a frame touches only the head of the buffer. As the first
 * allocation, the buffer lies right after all static data (strings,
 * constants, every memory.data), whatever order asc compiles them in, so
 * the data and a 20 ms frame at up to 24 kHz share one page; a static
 * buffer, reserved when this file is compiled, pushed the plugin's own data
 * 16 KiB further, onto other pages. Nothing the plugin allocated before
 * vox_buffer (in its top-level code) moves; what it allocates later comes
 * after the buffer.
 */
export let BUFFER: usize = 0;

let capacityBytes: i32 = 0;

/**
 * The capacity the host last asked for, in bytes (0 before vox_buffer). Frames
 * never hold more than capacity() / 2 samples, and a vox_process or flush
 * result must not exceed that either.
 */
export function capacity(): i32 {
  return capacityBytes;
}

/** The largest sample count that fits the buffer the host asked for. */
export function maxSamples(): i32 {
  return capacityBytes / SampleBytes;
}

/**
 * The ABI version marker (ABI §2). The host never calls it; its name is what
 * counts. Re-export it from your entry file.
 */
export function voxhost_abi_v1(): void {}

/**
 * vox_buffer(capacity_bytes) -> ptr (ABI §3): the static buffer if the
 * capacity fits, else 0 ("cannot provide"). Re-export it from your entry file.
 */
export function vox_buffer(capacity_bytes: i32): i32 {
  if (<u32>capacity_bytes > <u32>BufferBytes) return 0;
  if (BUFFER == 0) BUFFER = heap.alloc(<usize>BufferBytes); // 16-byte aligned, zeroed: memory never freed
  capacityBytes = capacity_bytes;
  return <i32>BUFFER;
}

/**
 * The frame as 16-bit samples, indexable in place:
 *
 *     const s = samples();
 *     s[i] = <i16>((<i32>s[i] * 3) >> 2);
 *
 * Indexes are not checked: stay within 0 .. samples-1 of vox_process.
 */
@unmanaged
export class Samples {
  /** Address of sample 0. */
  @inline get ptr(): usize {
    return changetype<usize>(this);
  }

  @inline @operator("[]")
  get(i: i32): i16 {
    return load<i16>(changetype<usize>(this) + (<usize>i << 1));
  }

  @inline @operator("[]=")
  set(i: i32, v: i16): void {
    store<i16>(changetype<usize>(this) + (<usize>i << 1), v);
  }
}

/** The frame buffer as samples (no allocation: a typed view of BUFFER). */
@inline
export function samples(): Samples {
  return changetype<Samples>(BUFFER);
}

/** Reads sample i of the frame buffer. */
@inline
export function sampleAt(i: i32): i16 {
  return load<i16>(BUFFER + (<usize>i << 1));
}

/** Writes sample i of the frame buffer. */
@inline
export function setSample(i: i32, v: i16): void {
  store<i16>(BUFFER + (<usize>i << 1), v);
}

/** Saturates a wider value to the int16 range. */
@inline
export function sat16(v: i32): i16 {
  return <i16>(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
}

/** Reads byte i of the frame buffer (the config or metadata JSON). */
@inline
export function byteAt(i: i32): u8 {
  return load<u8>(BUFFER + <usize>i);
}
