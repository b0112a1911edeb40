// A test fixture for `voxhost plugin test`: the mistake of issue 14, an
// AssemblyScript plugin that builds a string per frame. The SDK's stub
// runtime never frees and its memory is one page (min = max), so after
// some hundreds of frames the allocator finds no room, memory.grow fails
// and the plugin traps with `unreachable`, seconds into a call, after
// passing every short check.

import { StatusBadLength, StatusOK, maxSamples } from "@voxhost/sdk";

export { voxhost_abi_v1, vox_buffer } from "@voxhost/sdk";

let frames: i32 = 0;
// The string is kept, so the optimizer cannot drop its allocation.
let last: string = "";

export function vox_process(n: i32): i32 {
  if (n <= 0 || n > maxSamples()) return StatusBadLength;
  frames++;
  last = frames.toString();
  return last.length > 0 ? n : 0;
}

export function vox_event(kind: i32, arg: i32): i32 {
  return StatusOK;
}
