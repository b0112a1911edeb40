// tone: writes a tone, a beep pattern or comfort noise into the frame
// (README.md), mixed with the input or in its place.
//
// The sine comes from a 32-bit phase accumulator and a 2048-point table
// with linear interpolation (error about 1.2e-6 of full scale), so it is
// phase-continuous across frames however long the call. The noise is white
// (the sum of four uniform PCG32 draws, nearly Gaussian) and the same for
// the same seed.

import {
  config,
  dbToGain,
  FULL_SCALE,
  JsonKind,
  JsonView,
  log,
  LogError,
  maxSamples,
  Samples,
  samples,
  StatusBadConfig,
  StatusBadLength,
  StatusBadRate,
  StatusOK,
} from "@voxhost/sdk";

export { voxhost_abi_v1, vox_buffer } from "@voxhost/sdk";


const TABLE_BITS: i32 = 11;
const TABLE_N: i32 = 1 << TABLE_BITS;
const FRAC_BITS: i32 = 32 - TABLE_BITS;
const FRAC_SCALE: f64 = 1.0 / <f64>(1 << FRAC_BITS);
/** sin(2 pi k / 2048) for k = 0 … 2048 (the last entry repeats the first), f32. */
const TABLE: usize = memory.data((TABLE_N + 1) * 4, 16);
// cos and sin of 2 pi / 2048, for the rotation that fills the table.
const ROT_C: f64 = 0.9999952938095762;
const ROT_S: f64 = 0.003067956762965976;

const KIND_TONE: i32 = 0;
const KIND_BEEP: i32 = 1;
const KIND_NOISE: i32 = 2;

const SCRATCH: usize = memory.data(16);

// Configuration (defaults as in README.md).
let kind: i32 = KIND_TONE;
let hz: f64 = 440.0;
let levelDb: f64 = -20.0;
let replace: bool = false;
let onMs: f64 = 200.0;
let offMs: f64 = 800.0;
let rampMs: f64 = 5.0;
let seed: u64 = 1;

// Derived at vox_rate.
let inc: u32 = 0; // phase increment per sample
let amp: f64 = 0; // sine amplitude, or noise RMS, in samples
let onN: i32 = 0; // beep: samples on
let cycleN: i32 = 0; // beep: samples per on + off cycle
let rampN: i32 = 0; // beep: samples per edge
let rampInc: u32 = 0; // beep: phase step of the quarter sine the edges follow

// State.
let phase: u32 = 0;
let cyclePos: i32 = 0;
let rng: u64 = 0;
let rngInc: u64 = 0;

function bad(msg: string): i32 {
  log(LogError, msg);
  return StatusBadConfig;
}

/** The string member key, as one of the words of options ("a|b|c"): its index, -1 if absent, -2 if none. */
function choice(view: JsonView, key: string, options: string): i32 {
  const k = view.kind(key);
  if (k == JsonKind.Absent) return -1;
  if (k != JsonKind.String) return -2;
  const n = view.stringInto(key, SCRATCH, 16);
  if (n < 0) return -2;
  let index = 0;
  let start = 0;
  const len = options.length;
  for (let i = 0; i <= len; i++) {
    if (i == len || options.charCodeAt(i) == 0x7c) {
      if (i - start == n) {
        let same = true;
        for (let j = 0; j < n; j++) {
          if (<i32>load<u8>(SCRATCH + <usize>j) != options.charCodeAt(start + j)) {
            same = false;
            break;
          }
        }
        if (same) return index;
      }
      index++;
      start = i + 1;
    }
  }
  return -2;
}

export function vox_init(config_len: i32): i32 {
  const c = config(config_len);
  const k = choice(c, "kind", "tone|beep|noise");
  if (k == -2) return bad('tone: kind must be "tone", "beep" or "noise"');
  const m = choice(c, "mode", "mix|replace");
  if (m == -2) return bad('tone: mode must be "mix" or "replace"');
  const f = c.number("hz", 440.0);
  if (!(f > 0.0 && f <= 24000.0)) return bad("tone: hz must be a number above 0, under half the sample rate");
  const lvl = c.number("level_dbfs", -20.0);
  if (!(lvl >= -96.0 && lvl <= 0.0)) return bad("tone: level_dbfs must be a number from -96 to 0");
  const on = c.number("on_ms", 200.0);
  if (!(on >= 1.0 && on <= 60000.0)) return bad("tone: on_ms must be a number from 1 to 60000");
  const off = c.number("off_ms", 800.0);
  if (!(off >= 0.0 && off <= 60000.0)) return bad("tone: off_ms must be a number from 0 to 60000");
  const ramp = c.number("ramp_ms", 5.0);
  if (!(ramp >= 0.0 && ramp <= 100.0)) return bad("tone: ramp_ms must be a number from 0 to 100");
  const sd = c.number("seed", 1.0);
  if (!(sd >= 0.0 && sd <= 4294967295.0 && Math.floor(sd) == sd)) {
    return bad("tone: seed must be a whole number from 0 to 4294967295");
  }
  kind = k < 0 ? KIND_TONE : k;
  replace = m == 1;
  hz = f;
  levelDb = lvl;
  onMs = on;
  offMs = off;
  rampMs = ramp;
  seed = <u64>sd;
  fillTable();
  setup(8000); // vox_rate sets up again at the real rate
  return StatusOK;
}

export function vox_rate(input_rate: i32): i32 {
  if (input_rate < 8000 || input_rate > 48000) return StatusBadRate;
  if (kind != KIND_NOISE && !(hz < <f64>input_rate / 2.0)) {
    log(LogError, "tone: hz must be under half the sample rate");
    return StatusBadRate;
  }
  setup(input_rate);
  return input_rate;
}

function fillTable(): void {
  // Rotate (1, 0) by 2 pi / 2048 at each step, in f64: the error after a
  // full turn is about 1e-13, far under what f32 keeps.
  let c = 1.0;
  let s = 0.0;
  for (let k = 0; k < TABLE_N; k++) {
    store<f32>(TABLE + (<usize>k << 2), <f32>s);
    const c2 = c * ROT_C - s * ROT_S;
    s = s * ROT_C + c * ROT_S;
    c = c2;
  }
  store<f32>(TABLE + (<usize>TABLE_N << 2), 0.0);
}

function msToSamples(ms: f64, rate: i32): i32 {
  return <i32>Math.floor((ms * <f64>rate) / 1000.0 + 0.5);
}

function setup(rate: i32): void {
  inc = <u32>(<u64>Math.floor((hz / <f64>rate) * 4294967296.0 + 0.5));
  const rms = FULL_SCALE * dbToGain(levelDb);
  amp = kind == KIND_NOISE ? rms : rms * Math.SQRT2;
  onN = msToSamples(onMs, rate);
  if (onN < 1) onN = 1;
  cycleN = onN + msToSamples(offMs, rate);
  rampN = msToSamples(rampMs, rate);
  if (rampN > onN / 2) rampN = onN / 2;
  rampInc = rampN > 0 ? <u32>(<u64>1 << 30) / <u32>rampN : 0; // a quarter turn per edge
  phase = 0;
  cyclePos = 0;
  // PCG32 seeding (pcg32_srandom_r with stream 54).
  rngInc = (<u64>54 << 1) | 1;
  rng = 0;
  nextRandom();
  rng += seed;
  nextRandom();
}

/** PCG32 (XSH RR): 32 random bits. */
// @ts-ignore: decorator
@inline
function nextRandom(): u32 {
  const old = rng;
  rng = old * 6364136223846793005 + rngInc;
  const xorshifted = <u32>(((old >> 18) ^ old) >> 27);
  const rot = <u32>(old >> 59);
  return rotr<u32>(xorshifted, rot);
}

/** sin(2 pi ph / 2^32), interpolated from the table. */
// @ts-ignore: decorator
@inline
function sinAt(ph: u32): f64 {
  const p = TABLE + (<usize>(ph >>> FRAC_BITS) << 2);
  const a = <f64>load<f32>(p);
  const b = <f64>load<f32>(p, 4);
  return a + (b - a) * (<f64>(<i32>(ph & ((1 << FRAC_BITS) - 1))) * FRAC_SCALE);
}

/** Adds (or writes) v, rounded, into sample i, saturating. */
// @ts-ignore: decorator
@inline
function put(s: Samples, i: i32, v: f64, mix: bool): void {
  let y = <i32>nearest<f64>(v);
  if (mix) y += <i32>s[i];
  s[i] = <i16>(y > 32767 ? 32767 : y < -32768 ? -32768 : y);
}

export function vox_process(n: i32): i32 {
  if (n <= 0 || n > maxSamples()) return StatusBadLength;
  const s = samples();
  const mix = !replace;
  const a = amp;
  if (kind == KIND_NOISE) {
    // Four uniform draws in [-1, 1) have variance 4/3: sqrt(3/4) makes it 1.
    const k = (a * 0.8660254037844386) / 2147483648.0;
    for (let i = 0; i < n; i++) {
      const u =
        <f64>(<i32>nextRandom()) + <f64>(<i32>nextRandom()) + <f64>(<i32>nextRandom()) + <f64>(<i32>nextRandom());
      put(s, i, u * k, mix);
    }
    return n;
  }
  let ph = phase;
  const d = inc;
  if (kind == KIND_TONE || cycleN == onN) {
    for (let i = 0; i < n; i++) {
      put(s, i, a * sinAt(ph), mix);
      ph += d;
    }
  } else {
    let pos = cyclePos;
    for (let i = 0; i < n; i++) {
      let e = 0.0;
      if (pos < onN) {
        e = 1.0;
        // Raised-cosine edges: sin^2 over a quarter turn.
        if (pos < rampN) {
          const q = sinAt(<u32>pos * rampInc);
          e = q * q;
        } else if (pos >= onN - rampN) {
          const q = sinAt(<u32>(onN - 1 - pos) * rampInc);
          e = q * q;
        }
      }
      put(s, i, a * e * sinAt(ph), mix);
      ph += d;
      if (++pos == cycleN) pos = 0;
    }
    cyclePos = pos;
  }
  phase = ph;
  return n;
}
