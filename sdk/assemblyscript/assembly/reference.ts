// The far-end reference (ABI §11): what the caller was sent, time-aligned
// with the frame, for an echo canceller. A plugin asks for it by
// re-exporting vox_reference from its entry file:
//
//     export { voxhost_abi_v1, vox_buffer, vox_reference } from "@voxhost/sdk";
//
// and reads reference()[i] beside samples()[i] in vox_process. A plugin that
// does not re-export it gets none (and costs the host no copy). The reference
// is at the plugin's input rate, silence where there is no far end.

import { BufferBytes, Samples } from "./buffer";

/** Address of the reference buffer, taken from the heap by vox_reference (0 before). */
export let REFERENCE: usize = 0;

/**
 * vox_reference(capacity_bytes) -> ptr (ABI §11): a buffer of BufferBytes
 * beside the frame buffer, zeroed, if the capacity fits, else 0.
 */
export function vox_reference(capacity_bytes: i32): i32 {
  if (<u32>capacity_bytes > <u32>BufferBytes) return 0;
  if (REFERENCE == 0) REFERENCE = heap.alloc(<usize>BufferBytes); // zeroed: memory never freed
  return <i32>REFERENCE;
}

/** The frame's reference as samples (no allocation: a typed view of REFERENCE). */
@inline
export function reference(): Samples {
  return changetype<Samples>(REFERENCE);
}
