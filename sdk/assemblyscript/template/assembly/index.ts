// __NAME__: a voxhost plugin in AssemblyScript, made by
// `voxhost plugin new --lang assemblyscript`.
//
// It changes the volume by gain_db decibels and reports every DTMF key as the
// event __NAME__.key. Keep what you need and replace the processing.
// voxhost/README.md documents the SDK. Allocate nothing per frame: the stub
// runtime never frees, and a plugin that allocates in vox_process runs out of
// its page of memory and traps.
//
// Config: {"gain_db": -6} (the default; -60 to 20). Any other key is refused.
// Build: make   Check: make test   Hear: make run CONFIG="gain_db=-12"

import {
  EventClear,
  EventDTMF,
  EventFlush,
  LogError,
  StatusBadConfig,
  StatusBadLength,
  StatusOK,
  config,
  dbToGain,
  eventData,
  log,
  maxSamples,
  samples,
  sat16,
} from "@voxhost/sdk";

// The ABI version marker and the frame buffer come from the SDK.
export { voxhost_abi_v1, vox_buffer } from "@voxhost/sdk";

// State in globals: the host makes one instance per call, so they are per call.
let gainQ16: i64 = 65536; // the gain in Q16 (65536 = 1.0), set by vox_init
let samplesSeen: i64 = 0; // samples processed so far

const KEYS: StaticArray<string> = ["gain_db"];

// The config, a JSON object ({} when there is none).
export function vox_init(config_len: i32): i32 {
  const c = config(config_len);
  // A typo'd key is an error, not silently the default.
  if (!c.checkKeys("__NAME__", KEYS)) return StatusBadConfig;
  // number() gives the default when the key is absent and NaN when it holds
  // another JSON type, which the range check rejects.
  const db = c.number("gain_db", -6.0);
  if (!(db >= -60.0 && db <= 20.0)) {
    log(LogError, '__NAME__: "gain_db" must be a number from -60 to 20');
    return StatusBadConfig;
  }
  gainQ16 = <i64>Math.floor(dbToGain(db) * 65536.0 + 0.5);
  return StatusOK;
}

// One frame: n samples at samples(), processed in place.
export function vox_process(n: i32): i32 {
  if (n <= 0 || n > maxSamples()) return StatusBadLength;
  const s = samples();
  // s * gain, rounded to the nearest sample and saturated to 16 bits.
  for (let i = 0; i < n; i++) s[i] = sat16(<i32>((<i64>s[i] * gainQ16 + 32768) >> 16));
  samplesSeen += n;
  return n; // samples out; 0 swallows the frame
}

export function vox_event(kind: i32, arg: i32): i32 {
  if (kind == EventDTMF) {
    // arg: the key, '0'-'9', '*', '#', 'A'-'D'. The event {"key":"5","samples":1200}.
    eventData().raw('{"key":').quotedChar(arg).raw(',"samples":').int(samplesSeen).raw("}").emit("__NAME__.key");
  } else if (kind == EventClear) {
    // Barge-in: drop the audio you hold (this plugin holds none).
  } else if (kind == EventFlush) {
    // The input ended: write held samples at samples(), return their count.
    return 0;
  }
  // Call start and end, and kinds added later: nothing to do.
  return StatusOK;
}
