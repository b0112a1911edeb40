// Static scratch areas of the SDK, outside the frame buffer. Not exported by
// index.ts: the host-call wrappers and the JSON reader own them.

import { MaxEmitDataLen, MaxEmitNameLen, MaxLogLen } from "./abi";

/** Where emit() and EventData encode the event name. */
export const NAME_SCRATCH: usize = memory.data(MaxEmitNameLen, 16);

// The two 4 KiB scratches come from the heap at their first use rather than
// from static data, where they would push the data compiled after them
// (the plugin's strings and constants) onto other OS pages; a plugin that
// never logs or emits never touches them.
let logScratch: usize = 0;
let dataScratch: usize = 0;

/** Where log() encodes its message (MaxLogLen bytes). */
export function LOG_SCRATCH(): usize {
  if (logScratch == 0) logScratch = heap.alloc(<usize>MaxLogLen);
  return logScratch;
}

/** Where emit() encodes its data and EventData builds it (MaxEmitDataLen bytes). */
export function DATA_SCRATCH(): usize {
  if (dataScratch == 0) dataScratch = heap.alloc(<usize>MaxEmitDataLen);
  return dataScratch;
}
/** Where JsonView encodes the key it looks up. */
export const KEY_SCRATCH_BYTES: i32 = 256;
export const KEY_SCRATCH: usize = memory.data(KEY_SCRATCH_BYTES, 16);

/** The powers of ten a double holds exactly (JSON numbers, fixed-point text). */
export const POW10: StaticArray<f64> = [
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];
