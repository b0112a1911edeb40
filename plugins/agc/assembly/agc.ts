// agc: automatic gain control toward a target speech level (README.md).
//
// The signal is cut into 1 ms blocks. At the end of each block the detector
// updates and the gain (in dB) takes one step toward the gain the level
// calls for; the linear gain is ramped sample by sample across the next
// block, so it never jumps, within a frame or between frames. A soft knee
// and saturation keep every output sample inside 16 bits.

import {
  config,
  dbfsToMeanSquare,
  dbToGain,
  expf,
  FULL_SCALE,
  LN10,
  log,
  LogError,
  maxSamples,
  samples,
  StatusBadConfig,
  StatusBadLength,
  StatusBadRate,
  StatusOK,
} from "@voxhost/sdk";

export { voxhost_abi_v1, vox_buffer } from "@voxhost/sdk";

/** The soft knee starts at -3 dBFS (23197); above it, peaks bend toward full scale. */
const KNEE: f64 = 23197.0;
const HEADROOM: f64 = FULL_SCALE - KNEE;
/** Short-term level follower (gate and fast path): 10 ms time constant. */
const FAST_MS: f64 = 10.0;
/** The short-term level takes over when it is this many dB (as a power ratio) above the long-term level: 6 dB. */
const FAST_ALLOWANCE: f64 = 0.25118864315095796; // 10^(-6/10)
/** Longest window_ms: the ring holds the sum of squares of each 1 ms block. */
const MAX_WINDOW: i32 = 1000;
const RING: usize = memory.data(MAX_WINDOW * 8, 16);

// Configuration (defaults as in README.md).
let targetDb: f64 = -18.0;
let maxGainDb: f64 = 24.0;
let minGainDb: f64 = -12.0;
let attackMs: f64 = 10.0;
let releaseMs: f64 = 500.0;
let gateDb: f64 = -50.0;
let windowMs: i32 = 250;

// Derived at vox_rate.
let blockLen: i32 = 8;
let invBlock: f64 = 0.125;
let targetMs: f64 = 0; // target mean square, in samples^2
let gateMs: f64 = 0;
let aFast: f64 = 0;
let aAttack: f64 = 0;
let aRelease: f64 = 0;

// State.
let pos: i32 = 0; // samples into the current block
let acc: u64 = 0; // sum of x^2 over the current block
let fast: f64 = 0; // short-term mean square
let ringPos: i32 = 0;
let ringCount: i32 = 0;
let ringSum: u64 = 0; // sum of the ring's block sums
let gainDb: f64 = 0; // smoothed gain, dB
let gain: f64 = 1; // linear gain applied to the current sample
let gainEnd: f64 = 1; // linear gain at the end of the current block
let step: f64 = 0; // per-sample increment of gain in this block

// The f32 log, like the SDK's expf, is accurate to about 1e-7, plenty for
// gains, and its table is 256 bytes where the f64 one's is 2 KiB.
// @ts-ignore: decorator
@inline
function logf(x: f64): f64 {
  return <f64>Mathf.log(<f32>x);
}

function bad(msg: string): i32 {
  log(LogError, msg);
  return StatusBadConfig;
}

export function vox_init(config_len: i32): i32 {
  const c = config(config_len);
  const target = c.number("target_dbfs", -18.0);
  if (!(target >= -50.0 && target <= -3.0)) return bad("agc: target_dbfs must be a number from -50 to -3");
  const maxG = c.number("max_gain_db", 24.0);
  if (!(maxG >= 0.0 && maxG <= 40.0)) return bad("agc: max_gain_db must be a number from 0 to 40");
  const minG = c.number("min_gain_db", -12.0);
  if (!(minG >= -40.0 && minG <= 0.0)) return bad("agc: min_gain_db must be a number from -40 to 0");
  const att = c.number("attack_ms", 10.0);
  if (!(att >= 1.0 && att <= 5000.0)) return bad("agc: attack_ms must be a number from 1 to 5000");
  const rel = c.number("release_ms", 500.0);
  if (!(rel >= 1.0 && rel <= 60000.0)) return bad("agc: release_ms must be a number from 1 to 60000");
  const gate = c.number("gate_dbfs", -50.0);
  if (!(gate >= -96.0 && gate <= -10.0)) return bad("agc: gate_dbfs must be a number from -96 to -10");
  const win = c.number("window_ms", 250.0);
  if (!(win >= 10.0 && win <= <f64>MAX_WINDOW && Math.floor(win) == win)) {
    return bad("agc: window_ms must be a whole number from 10 to 1000");
  }
  targetDb = target;
  maxGainDb = maxG;
  minGainDb = minG;
  attackMs = att;
  releaseMs = rel;
  gateDb = gate;
  windowMs = <i32>win;
  setup(8000);
  return StatusOK;
}

export function vox_rate(input_rate: i32): i32 {
  if (input_rate < 8000 || input_rate > 48000) return StatusBadRate;
  setup(input_rate);
  return input_rate;
}


/** Coefficient of a one-pole step per block that covers 90% of a step in ms. */
function coef90(blockSec: f64, ms: f64): f64 {
  return 1.0 - expf((-LN10 * blockSec * 1000.0) / ms);
}

function setup(rate: i32): void {
  blockLen = rate / 1000; // 1 ms blocks (11 samples at 11025 Hz)
  invBlock = 1.0 / <f64>blockLen;
  const blockSec = <f64>blockLen / <f64>rate;
  targetMs = dbfsToMeanSquare(targetDb);
  gateMs = dbfsToMeanSquare(gateDb);
  aFast = 1.0 - expf((-blockSec * 1000.0) / FAST_MS);
  aAttack = coef90(blockSec, attackMs);
  aRelease = coef90(blockSec, releaseMs);
  pos = 0;
  acc = 0;
  fast = 0;
  ringPos = 0;
  ringCount = 0;
  ringSum = 0;
  gainDb = 0; // unity to start with, inside [min_gain_db, max_gain_db]
  gain = 1;
  gainEnd = 1;
  step = 0;
}

/** End of a 1 ms block: update the detector and plan the next block's gain ramp. */
function endBlock(): void {
  const sum = acc;
  acc = 0;
  pos = 0;
  const ms = <f64>(<i64>sum) * invBlock; // < 2^63: a signed conversion, which is faster
  fast += (ms - fast) * aFast;
  gain = gainEnd; // exact, whatever the rounding of the ramp
  if (fast > gateMs && ms * 10.0 > gateMs) {
    // Active: the last 10 ms are above the gate, and this block is above
    // the gate - 10 dB (the block alone would let noise just under the gate
    // through now and then; the 10 ms level alone would count the first tens
    // of ms of a pause, while it decays).
    // The block joins the long-term window: the last window_ms of audio
    // above the gate, so pauses do not dilute the level.
    const slot = RING + (<usize>ringPos << 3);
    if (ringCount == windowMs) ringSum -= load<u64>(slot);
    else ringCount++;
    store<u64>(slot, sum);
    ringSum += sum;
    if (++ringPos == windowMs) ringPos = 0;
    let level = <f64>(<i64>ringSum) / (<f64>ringCount * <f64>blockLen);
    const quick = fast * FAST_ALLOWANCE;
    if (quick > level) level = quick;
    let want = maxGainDb;
    if (level > 0) {
      want = (10.0 / LN10) * logf(targetMs / level);
      if (want > maxGainDb) want = maxGainDb;
      if (want < minGainDb) want = minGainDb;
    }
    gainDb += (want - gainDb) * (want < gainDb ? aAttack : aRelease);
    gainEnd = dbToGain(gainDb);
  }
  // Below the gate the gain holds: gainEnd stays, and the ramp is flat.
  step = (gainEnd - gain) * invBlock;
}

/** Applies the soft knee above -3 dBFS, then rounds; the result always fits 16 bits. */
// @ts-ignore: decorator
@inline
function limit(y: f64): i16 {
  const m = Math.abs(y);
  if (m > KNEE) {
    const u = (m - KNEE) / HEADROOM;
    const bent = KNEE + (HEADROOM * u) / (1.0 + u); // < FULL_SCALE for every finite u
    y = y < 0 ? -bent : bent;
  }
  return <i16>(<i32>nearest<f64>(y));
}

export function vox_process(n: i32): i32 {
  if (n <= 0 || n > maxSamples()) return StatusBadLength;
  const s = samples();
  let i = 0;
  while (i < n) {
    // Up to the end of the block (or of the frame), with the state in locals.
    let m = blockLen - pos;
    if (m > n - i) m = n - i;
    const end = i + m;
    const st = step;
    let a = acc;
    let g = gain;
    for (; i < end; i++) {
      const x = <i32>s[i];
      a += <u64>(x * x);
      g += st;
      s[i] = limit(<f64>x * g);
    }
    acc = a;
    gain = g;
    pos += m;
    if (pos == blockLen) endBlock();
  }
  return n;
}
