// Static scratch areas of the SDK, outside the frame buffer. Not exported by
// index.ts: the host-call wrappers and the JSON reader own them.

import { MaxEmitDataLen, MaxEmitNameLen, MaxLogLen } from "./abi";

/** Where log() encodes its message. */
export const LOG_SCRATCH: usize = memory.data(MaxLogLen, 16);
/** Where emit() and EventData encode the event name. */
export const NAME_SCRATCH: usize = memory.data(MaxEmitNameLen, 16);
/** Where emit() encodes its data and EventData builds it. */
export const DATA_SCRATCH: usize = memory.data(MaxEmitDataLen, 16);
/** Where JsonView encodes the key it looks up. */
export const KEY_SCRATCH_BYTES: i32 = 256;
export const KEY_SCRATCH: usize = memory.data(KEY_SCRATCH_BYTES, 16);

/** The powers of ten a double holds exactly (JSON numbers, fixed-point text). */
export const POW10: StaticArray<f64> = [
  1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];
