// Levels and gains, shared by the plugins that measure or set a level.

/** Full scale of a sample: dBFS levels are RMS relative to 32767. */
export const FULL_SCALE: f64 = 32767.0;
/** ln 10, for converting decibels. */
export const LN10: f64 = 2.302585092994046;

/**
 * e^x through the f32 exp: accurate to about 1e-7, plenty for gains and
 * coefficients, and its table is 256 bytes where the f64 one's is 2 KiB.
 */
// @ts-ignore: decorator
@inline
export function expf(x: f64): f64 {
  return <f64>Mathf.exp(<f32>x);
}

/** The linear gain of a level in dB: 10^(db/20). */
// @ts-ignore: decorator
@inline
export function dbToGain(db: f64): f64 {
  return expf(db * (LN10 / 20.0));
}

/**
 * The level in dB of a linear gain: 20 log10(gain); -Infinity for 0. A peak
 * in dBFS is gainToDb(peak / FULL_SCALE).
 */
export function gainToDb(gain: f64): f64 {
  return Math.log(gain) * (20.0 / LN10);
}

/** The mean square, in samples², of an RMS level in dBFS. */
export function dbfsToMeanSquare(db: f64): f64 {
  const a = FULL_SCALE * dbToGain(db);
  return a * a;
}
