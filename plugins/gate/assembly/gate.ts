// gate: a noise gate (README.md).
//
// A 5 ms RMS follower measures the level. The gate opens when the level
// rises above threshold_dbfs, stays open while it is above threshold_dbfs -
// hysteresis_db and for hold_ms after it falls below, then closes. Open, the
// gain ramps linearly up to 1 over attack_ms; closed, it falls in dB at a
// steady rate to floor_db over release_ms. The gain moves every sample, so
// the output never jumps.

import {
  config,
  dbfsToMeanSquare,
  dbToGain,
  expf,
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

/** Time constant of the level follower (mean square), ms. */
const DETECT_MS: f64 = 5.0;

// Configuration (defaults as in README.md).
let thresholdDb: f64 = -45.0;
let hysteresisDb: f64 = 3.0;
let attackMs: f64 = 2.0;
let holdMs: f64 = 100.0;
let releaseMs: f64 = 150.0;
let floorDb: f64 = -60.0;

// Derived at vox_rate.
let openMs: f64 = 0; // mean square that opens the gate, samples^2
let closeMs: f64 = 0; // mean square under which the hold starts
let aDetect: f64 = 0;
let floorGain: f64 = 0;
let attackStep: f64 = 0; // linear gain added per sample while opening
let releaseMul: f64 = 1; // factor per sample while closing
let holdSamples: i32 = 0;

// State.
let env: f64 = 0; // mean-square follower
let open: bool = false;
let hold: i32 = 0; // samples of hold left
let gain: f64 = 0;

function bad(msg: string): i32 {
  log(LogError, msg);
  return StatusBadConfig;
}

export function vox_init(config_len: i32): i32 {
  const c = config(config_len);
  const th = c.number("threshold_dbfs", -45.0);
  if (!(th >= -96.0 && th <= 0.0)) return bad("gate: threshold_dbfs must be a number from -96 to 0");
  const hy = c.number("hysteresis_db", 3.0);
  if (!(hy >= 0.0 && hy <= 20.0)) return bad("gate: hysteresis_db must be a number from 0 to 20");
  const att = c.number("attack_ms", 2.0);
  if (!(att >= 0.0 && att <= 1000.0)) return bad("gate: attack_ms must be a number from 0 to 1000");
  const hld = c.number("hold_ms", 100.0);
  if (!(hld >= 0.0 && hld <= 10000.0)) return bad("gate: hold_ms must be a number from 0 to 10000");
  const rel = c.number("release_ms", 150.0);
  if (!(rel >= 0.0 && rel <= 10000.0)) return bad("gate: release_ms must be a number from 0 to 10000");
  const fl = c.number("floor_db", -60.0);
  if (!(fl >= -96.0 && fl <= 0.0)) return bad("gate: floor_db must be a number from -96 to 0");
  thresholdDb = th;
  hysteresisDb = hy;
  attackMs = att;
  holdMs = hld;
  releaseMs = rel;
  floorDb = fl;
  setup(8000);
  return StatusOK;
}

export function vox_rate(input_rate: i32): i32 {
  if (input_rate < 8000 || input_rate > 48000) return StatusBadRate;
  setup(input_rate);
  return input_rate;
}


/** A duration in ms as a whole number of samples, at least 1. */
function samplesOf(ms: f64, rate: i32): f64 {
  const n = Math.floor((ms * <f64>rate) / 1000.0 + 0.5);
  return n < 1.0 ? 1.0 : n;
}

function setup(rate: i32): void {
  openMs = dbfsToMeanSquare(thresholdDb);
  closeMs = dbfsToMeanSquare(thresholdDb - hysteresisDb);
  aDetect = 1.0 - expf(-1000.0 / (DETECT_MS * <f64>rate));
  floorGain = dbToGain(floorDb);
  attackStep = (1.0 - floorGain) / samplesOf(attackMs, rate);
  // floor_db in release_ms: a steady fall in dB (an exponential decay).
  releaseMul = expf((floorDb * (LN10 / 20.0)) / samplesOf(releaseMs, rate));
  holdSamples = <i32>Math.floor((holdMs * <f64>rate) / 1000.0 + 0.5);
  env = 0;
  open = false;
  hold = 0;
  gain = floorGain; // closed until there is something to let through
}

export function vox_process(n: i32): i32 {
  if (n <= 0 || n > maxSamples()) return StatusBadLength;
  const s = samples();
  // Locals, not globals, in the loop: the state is written back at the end.
  const aD = aDetect;
  const oMs = openMs;
  const cMs = closeMs;
  const hN = holdSamples;
  const up = attackStep;
  const down = releaseMul;
  const fl = floorGain;
  let e = env;
  let g = gain;
  let o = open;
  let h = hold;
  for (let i = 0; i < n; i++) {
    const x = <f64>s[i];
    e += (x * x - e) * aD;
    if (e > (o ? cMs : oMs)) {
      o = true;
      h = hN;
    } else if (h > 0) {
      h--;
    } else {
      o = false;
    }
    if (o) {
      if (g < 1.0) {
        g += up;
        if (g > 1.0) g = 1.0;
      }
    } else if (g > fl) {
      g *= down;
      if (g < fl) g = fl;
    }
    // |x * g| <= |x|: no saturation needed. At g = 1 the sample is unchanged.
    s[i] = <i16>(<i32>nearest<f64>(x * g));
  }
  env = e;
  gain = g;
  open = o;
  hold = h;
  return n;
}
