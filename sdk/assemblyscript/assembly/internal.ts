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
