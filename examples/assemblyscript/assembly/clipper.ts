// clipper — the "every SDK feature" example (examples/CLIPPER.md) in
// AssemblyScript, on the voxhost SDK: a peak limiter with a 16-sample
// lookahead, a config with a number, a string and a boolean and no unknown
// keys, dB both ways, an event with integers and a fixed-point decimal, a
// DTMF reset, held audio that clear drops and flush releases. Nothing is
// allocated after vox_init, as a plugin on the stub runtime must.

import {
  EventClear,
  EventDTMF,
  EventFlush,
  FULL_SCALE,
  JsonKind,
  LogError,
  StatusBadConfig,
  StatusBadLength,
  StatusOK,
  config,
  dbToGain,
  eventData,
  gainToDb,
  log,
  maxSamples,
  samples,
} from "@voxhost/sdk";

export { voxhost_abi_v1, vox_buffer } from "@voxhost/sdk";

const HOLD = 16;
const KEYS: StaticArray<string> = ["threshold_db", "mode", "report"];
const MODE: usize = memory.data(8); // where vox_init decodes "mode"

let threshold: i32 = 16422; // floor(32767 * 10^(-6/20) + 0.5)
let soft = false;
let report = true;
let clipped: i64 = 0;
let peak: i32 = 0;
const ring = new StaticArray<i16>(HOLD);
let pos = 0;
let held = 0;

function refuse(why: string): i32 {
  log(LogError, why);
  return StatusBadConfig;
}

/** True if the n bytes at MODE are the ASCII string s. */
function modeIs(n: i32, s: string): bool {
  if (n != s.length) return false;
  for (let i = 0; i < n; i++) {
    if (<i32>load<u8>(MODE + <usize>i) != s.charCodeAt(i)) return false;
  }
  return true;
}

export function vox_init(config_len: i32): i32 {
  const c = config(config_len);
  if (!c.checkKeys("clipper", KEYS)) return StatusBadConfig;
  const kind = c.kind("threshold_db");
  if (kind != JsonKind.Absent && kind != JsonKind.Number) return refuse('clipper: "threshold_db" must be a number');
  const db = c.number("threshold_db", -6.0);
  if (!(db >= -60.0 && db <= 0.0)) return refuse('clipper: "threshold_db" must be from -60 to 0');
  if (c.has("mode")) {
    const n = c.stringInto("mode", MODE, 8);
    if (modeIs(n, "hard")) soft = false;
    else if (modeIs(n, "soft")) soft = true;
    else return refuse('clipper: "mode" must be "hard" or "soft"');
  }
  if (c.has("report")) {
    if (c.kind("report") != JsonKind.Bool) return refuse('clipper: "report" must be true or false');
    report = c.bool("report");
  }
  threshold = <i32>Math.floor(FULL_SCALE * dbToGain(db) + 0.5);
  return StatusOK;
}

export function vox_process(n: i32): i32 {
  if (n <= 0 || n > maxSamples()) return StatusBadLength;
  const s = samples();
  for (let i = 0; i < n; i++) {
    const v = <i32>s[i];
    let a = v < 0 ? -v : v;
    let x = v;
    if (a > peak) peak = a;
    if (a > threshold) {
      clipped++;
      a = soft ? threshold + ((a - threshold) >> 2) : threshold;
      x = v < 0 ? -a : a;
    }
    s[i] = unchecked(ring[pos]);
    unchecked((ring[pos] = <i16>x));
    pos = (pos + 1) % HOLD;
    if (held < HOLD) held++;
  }
  return n;
}

/** clipper.stats {"key":"5","clipped":12,"peak":32768,"peak_dbfs":0.00}; key -1 is null. */
function stats(key: i32): void {
  const d = eventData().raw('{"key":');
  if (key >= 0) d.quotedChar(key);
  else d.null();
  d.raw(',"clipped":').int(clipped).raw(',"peak":').int(peak);
  d.raw(',"peak_dbfs":').fixed(gainToDb(<f64>peak / FULL_SCALE), 2).raw("}").emit("clipper.stats");
}

function dropHeld(): void {
  for (let i = 0; i < HOLD; i++) unchecked((ring[i] = 0));
  pos = 0;
  held = 0;
}

export function vox_event(kind: i32, arg: i32): i32 {
  if (kind == EventDTMF) {
    if (report) stats(arg);
    if (arg == 0x2a) {
      // '*'
      clipped = 0;
      peak = 0;
    }
  } else if (kind == EventClear) {
    dropHeld();
  } else if (kind == EventFlush) {
    const s = samples();
    const n = held;
    for (let i = 0; i < n; i++) s[i] = unchecked(ring[(pos + HOLD - n + i) % HOLD]);
    if (report) stats(-1);
    dropHeld();
    return n;
  }
  return StatusOK;
}
