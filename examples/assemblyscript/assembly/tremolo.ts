// The tremolo example plugin (examples/TREMOLO.md) in AssemblyScript, on the
// voxhost SDK. Integer arithmetic throughout, as the spec requires, so the
// output is bit-identical to every other language's build.

import {
  EventDTMF,
  LogError,
  StatusBadConfig,
  StatusBadLength,
  StatusBadRate,
  StatusOK,
  config,
  eventData,
  log,
  maxSamples,
  samples,
} from "@voxhost/sdk";

// The ABI version marker and the frame buffer come from the SDK unchanged.
export { voxhost_abi_v1, vox_buffer } from "@voxhost/sdk";

let rateHz: f64 = 4.0;
let depthQ16: i32 = 32768; // floor(0.5 * 65536 + 0.5)
let inc: u32 = 0;
let phase: u32 = 0;
let enabled: bool = true;

export function vox_init(config_len: i32): i32 {
  const c = config(config_len);
  // number() gives the default when the key is absent and NaN when it holds
  // another JSON type, which the range checks reject.
  const rate = c.number("rate_hz", 4.0);
  if (!(rate >= 0.1 && rate <= 20.0)) {
    log(LogError, "tremolo: rate_hz must be a number from 0.1 to 20");
    return StatusBadConfig;
  }
  const depth = c.number("depth", 0.5);
  if (!(depth >= 0.0 && depth <= 1.0)) {
    log(LogError, "tremolo: depth must be a number from 0 to 1");
    return StatusBadConfig;
  }
  rateHz = rate;
  depthQ16 = <i32>Math.floor(depth * 65536.0 + 0.5);
  return StatusOK;
}

export function vox_rate(input_rate: i32): i32 {
  if (input_rate < 8000 || input_rate > 48000) return StatusBadRate;
  inc = <u32>Math.floor((rateHz * 4294967296.0) / <f64>input_rate + 0.5);
  return input_rate;
}

export function vox_process(n: i32): i32 {
  if (n <= 0 || n > maxSamples()) return StatusBadLength;
  const s = samples();
  const d = <i64>depthQ16;
  let ph = phase;
  for (let i = 0; i < n; i++) {
    const p = <i64>(ph >>> 16); // 0 … 65535
    const tri = p < 32768 ? 2 * p : 2 * (65535 - p); // 0 … 65534
    const g = 65536 - ((d * tri) >> 16); // Q16 gain, 64-bit product
    if (enabled) s[i] = <i16>((<i64>s[i] * g) >> 16); // arithmetic shift: floor
    ph += inc; // wraps modulo 2^32
  }
  phase = ph;
  return n;
}

export function vox_event(kind: i32, arg: i32): i32 {
  if (kind == EventDTMF) {
    if (arg == 0x23) enabled = !enabled; // '#'
    eventData().raw('{"digit":').quotedChar(arg).raw(',"enabled":').bool(enabled).raw("}").emit("tremolo.key");
  }
  return StatusOK;
}
