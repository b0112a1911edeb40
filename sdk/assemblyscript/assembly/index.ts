// @voxhost/sdk — write voxhost plugins (ABI v1, abi/ABI.md) in AssemblyScript.
//
// AssemblyScript exports only what the entry file exports, so a plugin's entry
// file re-exports the two exports the SDK implements and writes its own:
//
//     import { samples, StatusBadLength, maxSamples } from "@voxhost/sdk";
//     export { voxhost_abi_v1, vox_buffer } from "@voxhost/sdk";
//
//     export function vox_process(n: i32): i32 {
//       if (n <= 0 || n > maxSamples()) return StatusBadLength;
//       const s = samples();
//       for (let i = 0; i < n; i++) s[i] = <i16>(s[i] >> 1);
//       return n;
//     }
//
// Optional: vox_init(config_len), vox_rate(input_rate), vox_event(kind, arg),
// and vox_reference, re-exported from the SDK, for the far-end reference
// (reference.ts).
// Build with the flags of asconfig.plugin.json (stub runtime, one page of
// memory with min = max, no env.abort import): see README.md.

export * from "./abi";
export * from "./buffer";
export * from "./reference";
export * from "./host";
export * from "./json";
export * from "./events";
export * from "./level";
