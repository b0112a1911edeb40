//! Rounding without libm: `core` has no `f64::floor` before Rust 1.85 (and it
//! is not available in `no_std` on the toolchains this SDK supports).

const TWO52: f64 = 4503599627370496.0;
const SIGN: u64 = 1 << 63;

/// The largest integer not greater than `x`, exactly as C's `floor`
/// (including `-0.0`, infinities and NaN).
///
/// For |x| < 2^52 it truncates toward zero through `i64` (exact there) and
/// steps down by one when that rounded a negative value up; every f64 of
/// magnitude 2^52 or more is already an integer.
#[inline]
pub fn floor(x: f64) -> f64 {
    if !(x.abs_lt(TWO52)) {
        return x; // integral, infinite or NaN
    }
    let t = x as i64 as f64; // truncation toward zero, exact
    let f = if t > x { t - 1.0 } else { t };
    // floor(-0.0) is -0.0 and floor(-0.5) is -1; only a zero needs the sign back.
    if f == 0.0 {
        f64::from_bits(x.to_bits() & SIGN)
    } else {
        f
    }
}

/// `floor(x + 0.5)`: rounds half up, the rounding the voxhost examples
/// specify for their configuration conversions (TREMOLO.md). `x + 0.5` is
/// rounded by IEEE 754 first, exactly as in C, so the result is the same bit
/// for bit in every language.
///
/// For non-negative values this is what `(x + 0.5) as u64` gives, since
/// truncation toward zero is the floor there; this function is also right
/// for negative ones.
#[inline]
pub fn round_half_up(x: f64) -> f64 {
    floor(x + 0.5)
}

/// Saturates a wide sample to 16 bits.
#[inline]
pub fn sat16(v: i32) -> i16 {
    if v > i16::MAX as i32 {
        i16::MAX
    } else if v < i16::MIN as i32 {
        i16::MIN
    } else {
        v as i16
    }
}

trait AbsLt {
    fn abs_lt(self, limit: f64) -> bool;
}

impl AbsLt for f64 {
    /// |self| < limit, false for NaN (`f64::abs` is not in `core` on 1.63).
    #[inline]
    fn abs_lt(self, limit: f64) -> bool {
        f64::from_bits(self.to_bits() & !SIGN) < limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_matches_c() {
        let cases: [(f64, f64); 14] = [
            (0.0, 0.0),
            (0.5, 0.0),
            (0.9999999999999999, 0.0),
            (1.0, 1.0),
            (1.5, 1.0),
            (-0.5, -1.0),
            (-1.0, -1.0),
            (-1.5, -2.0),
            (52428.8, 52428.0),
            (4503599627370495.5, 4503599627370495.0),
            (-4503599627370495.5, -4503599627370496.0),
            (9007199254740993.0, 9007199254740993.0),
            (1e300, 1e300),
            (f64::NEG_INFINITY, f64::NEG_INFINITY),
        ];
        for (x, want) in cases {
            assert_eq!(floor(x), want, "floor({})", x);
            assert_eq!(floor(x), x.floor(), "floor({}) vs std", x);
        }
        assert!(floor(f64::NAN).is_nan());
        assert_eq!(floor(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(floor(-0.25), -1.0);
        assert_eq!(floor(0.25).to_bits(), 0.0f64.to_bits());
    }

    #[test]
    fn rounding() {
        assert_eq!(round_half_up(0.8 * 65536.0), 52429.0);
        assert_eq!(round_half_up(2.5), 3.0);
        assert_eq!(round_half_up(-2.5), -2.0);
        assert_eq!(round_half_up(5.0 * 4294967296.0 / 8000.0), 2684355.0);
        assert_eq!(sat16(40000), 32767);
        assert_eq!(sat16(-40000), -32768);
        assert_eq!(sat16(-5), -5);
    }
}
