//! Rounding, exponentials and logarithms without libm: `core` has no
//! `f64::floor`, `exp`, `ln` or `powf` in `no_std` on the toolchains this SDK
//! supports (the methods of `f64` that need libm live in `std`).

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

const LN2_HI: f64 = 6.93147180369123816490e-01;
const LN2_LO: f64 = 1.90821492927058770002e-10;

/// ln 10.
pub const LN10: f64 = 2.302585092994045684;
/// Full scale of a sample: levels in dBFS are relative to 32767.
pub const FULL_SCALE: f64 = 32767.0;

/// `x * 2^k` for the `k` [`exp`] needs, exactly (two steps keep `2^k` a
/// normal number).
fn scale2(x: f64, k: i32) -> f64 {
    let pow2 = |k: i32| f64::from_bits(((0x3ff + k) as u64) << 52);
    if k > 1023 {
        x * pow2(1023) * pow2(k - 1023)
    } else if k < -1022 {
        x * pow2(-1022) * pow2(k + 1022)
    } else {
        x * pow2(k)
    }
}

/// e^x, within 1 unit in the last place (fdlibm's algorithm: reduction by
/// ln 2 in two parts, then a rational approximation); +inf above 709.78, 0
/// below -745.13, NaN for NaN.
pub fn exp(x: f64) -> f64 {
    const INV_LN2: f64 = 1.44269504088896338700e+00;
    const P1: f64 = 1.66666666666666019037e-01;
    const P2: f64 = -2.77777777770155933842e-03;
    const P3: f64 = 6.61375632143793436117e-05;
    const P4: f64 = -1.65339022054652515390e-06;
    const P5: f64 = 4.13813679705723846039e-08;
    if x.is_nan() {
        return x;
    }
    if x > 709.782712893383973096 {
        return f64::INFINITY;
    }
    if x < -745.13321910194110842 {
        return 0.0;
    }
    let (hi, lo, k) = if !x.abs_lt(0.5 * LN2_HI) {
        let k = (INV_LN2 * x + if x < 0.0 { -0.5 } else { 0.5 }) as i32;
        (x - k as f64 * LN2_HI, k as f64 * LN2_LO, k)
    } else if !x.abs_lt(3.725290298461914e-9) {
        (x, 0.0, 0)
    } else {
        return 1.0 + x;
    };
    let r = hi - lo;
    let rr = r * r;
    let c = r - rr * (P1 + rr * (P2 + rr * (P3 + rr * (P4 + rr * P5))));
    let y = 1.0 + (r * c / (2.0 - c) - lo + hi);
    if k == 0 {
        y
    } else {
        scale2(y, k)
    }
}

/// The natural logarithm, within 1 unit in the last place (fdlibm's
/// algorithm); -inf for 0, NaN below 0.
pub fn ln(x: f64) -> f64 {
    const LG1: f64 = 6.666666666666735130e-01;
    const LG2: f64 = 3.999999999940941908e-01;
    const LG3: f64 = 2.857142874366239149e-01;
    const LG4: f64 = 2.222219843214978396e-01;
    const LG5: f64 = 1.818357216161805012e-01;
    const LG6: f64 = 1.531383769920937332e-01;
    const LG7: f64 = 1.479819860511658591e-01;
    let mut x = x;
    let mut u = x.to_bits();
    let mut hx = (u >> 32) as u32;
    let mut k: i32 = 0;
    if hx < 0x0010_0000 || hx >> 31 != 0 {
        if u << 1 == 0 {
            return f64::NEG_INFINITY;
        }
        if hx >> 31 != 0 {
            return f64::NAN;
        }
        // Subnormal: scale it up by 2^54.
        k -= 54;
        x *= 18014398509481984.0;
        u = x.to_bits();
        hx = (u >> 32) as u32;
    } else if hx >= 0x7ff0_0000 {
        return x; // +inf or NaN
    } else if hx == 0x3ff0_0000 && u << 32 == 0 {
        return 0.0;
    }
    // Reduce x to 1+f with sqrt(2)/2 < 1+f < sqrt(2).
    hx += 0x3ff0_0000 - 0x3fe6_a09e;
    k += (hx >> 20) as i32 - 0x3ff;
    hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let f = f64::from_bits((hx as u64) << 32 | (u & 0xffff_ffff)) - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let dk = k as f64;
    s * (hfsq + t1 + t2) + dk * LN2_LO - hfsq + f + dk * LN2_HI
}

/// log10(x), as `ln(x) / ln 10`.
pub fn log10(x: f64) -> f64 {
    ln(x) * (1.0 / LN10)
}

/// x^y: by squaring for integer y with |y| <= 64, otherwise as
/// `exp(y * ln(x))`, within (2 + |y ln x|) units in the last place: a
/// relative error below 1e-13 wherever |y ln x| stays under 400 (every
/// result from 1e-170 to 1e170). `powf(x, 0.0)` is 1 for every x; for
/// x = 0 it is 0 (y > 0) or +inf (y < 0); for x < 0, NaN unless y is an
/// integer, when its sign follows y's parity as in libm.
pub fn powf(x: f64, y: f64) -> f64 {
    if y == 0.0 {
        return 1.0;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 {
        return if y > 0.0 { 0.0 } else { f64::INFINITY };
    }
    if y.abs_lt(65.0) && floor(y) == y {
        // A small integer power by squaring: exact where the result and
        // every intermediate are (powf(2.0, 10.0) is 1024), within a few
        // units in the last place otherwise.
        let (mut base, mut n, mut acc) = (x, if y < 0.0 { -y } else { y } as u32, 1.0);
        while n > 0 {
            if n & 1 == 1 {
                acc *= base;
            }
            base *= base;
            n >>= 1;
        }
        return if y < 0.0 { 1.0 / acc } else { acc };
    }
    if x < 0.0 {
        if floor(y) != y {
            return f64::NAN;
        }
        let odd = y.abs_lt(9007199254740992.0) && (y as i64) % 2 != 0;
        let m = exp(y * ln(-x));
        return if odd { -m } else { m };
    }
    exp(y * ln(x))
}

/// The linear gain of a level in dB: 10^(db/20), e.g. 0.5012 for -6 dB.
pub fn db_to_gain(db: f64) -> f64 {
    exp(db * (LN10 / 20.0))
}

/// The level in dB of a linear gain: 20 log10(gain); -inf for 0. A peak in
/// dBFS is `gain_to_db(peak as f64 / FULL_SCALE)`.
pub fn gain_to_db(gain: f64) -> f64 {
    ln(gain) * (20.0 / LN10)
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

    /// Units in the last place between a and b.
    fn ulps(a: f64, b: f64) -> u64 {
        if a == b {
            return 0;
        }
        let key = |x: f64| {
            let u = x.to_bits() as i64;
            if u < 0 {
                i64::MIN - u
            } else {
                u
            }
        };
        (key(a) - key(b)).unsigned_abs()
    }

    /// 200,000 pseudo-random values uniform in [lo, hi).
    fn samples(lo: f64, hi: f64, mut f: impl FnMut(f64)) {
        let mut x: u64 = 0x9E3779B97F4A7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f(lo + (hi - lo) * ((x >> 11) as f64 / (1u64 << 53) as f64));
        }
    }

    #[test]
    fn exp_and_ln_within_one_ulp_of_std() {
        extern crate std;
        let mut worst = 0;
        samples(-745.0, 709.7, |x| worst = worst.max(ulps(exp(x), x.exp())));
        samples(-1.0, 1.0, |x| worst = worst.max(ulps(exp(x), x.exp())));
        assert!(worst <= 1, "exp: {} ulps", worst);
        worst = 0;
        samples(0.0, 4.0, |x| worst = worst.max(ulps(ln(x), x.ln())));
        samples(-700.0, 700.0, |e| {
            let x = e.exp();
            worst = worst.max(ulps(ln(x), x.ln()));
        });
        assert!(worst <= 1, "ln: {} ulps", worst);
        for x in [0.0, 1.0, f64::INFINITY, 5e-324, 1e-310, f64::MAX] {
            assert_eq!(ln(x), x.ln(), "ln({})", x);
        }
        assert!(ln(-1.0).is_nan() && ln(f64::NAN).is_nan() && exp(f64::NAN).is_nan());
        assert_eq!((exp(0.0), exp(1000.0), exp(-1000.0), exp(f64::NEG_INFINITY)), (1.0, f64::INFINITY, 0.0, 0.0));
    }

    #[test]
    fn powf_and_decibels() {
        extern crate std;
        let mut worst = 0.0f64;
        samples(1e-3, 1e3, |x| {
            for y in [-7.5, -2.0, -0.5, 0.3, 1.0, 2.5, 11.0] {
                worst = worst.max(((powf(x, y) - x.powf(y)) / x.powf(y)).abs());
            }
        });
        assert!(worst < 1e-13, "powf: relative error {}", worst);
        assert_eq!((powf(2.0, 10.0), powf(-2.0, 3.0), powf(-2.0, 2.0), powf(0.0, -1.0)), (1024.0, -8.0, 4.0, f64::INFINITY));
        assert!(powf(-2.0, 0.5).is_nan());
        assert_eq!(powf(f64::NAN, 0.0), 1.0);
        worst = 0.0;
        samples(-120.0, 40.0, |db| {
            let want = 10f64.powf(db / 20.0);
            worst = worst.max(((db_to_gain(db) - want) / want).abs());
            worst = worst.max((gain_to_db(want) - db).abs() / 120.0);
        });
        assert!(worst < 1e-14, "dB: relative error {}", worst);
        assert_eq!(db_to_gain(0.0), 1.0);
        assert_eq!(gain_to_db(1.0), 0.0);
        assert_eq!(gain_to_db(0.0), f64::NEG_INFINITY);
        assert_eq!(round_half_up(db_to_gain(-6.0) * FULL_SCALE), 16422.0); // 16422.40
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
