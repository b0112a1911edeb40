//! A fixed-capacity string on the stack, for log lines and event data.

/// A string of at most `N` bytes, built on the stack without allocating,
/// e.g. the JSON data of an event:
///
/// ```
/// let mut data = voxhost::StrBuf::<64>::new();
/// data.push_str("{\"digit\":\"").push_char('5').push_str("\",\"count\":").push_int(12).push_str("}");
/// assert_eq!(data.as_str(), r#"{"digit":"5","count":12}"#);
/// ```
///
/// What does not fit is cut off (at a character boundary) and
/// [`overflowed`](StrBuf::overflowed) turns true. It also implements
/// `core::fmt::Write`, so `write!` works, at the cost of pulling the
/// formatting machinery (several KiB) into the plugin.
#[derive(Clone)]
pub struct StrBuf<const N: usize> {
    buf: [u8; N],
    len: usize,
    overflowed: bool,
}

impl<const N: usize> Default for StrBuf<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> StrBuf<N> {
    /// An empty string.
    pub const fn new() -> Self {
        StrBuf { buf: [0; N], len: 0, overflowed: false }
    }

    /// The text so far.
    pub fn as_str(&self) -> &str {
        // SAFETY: only whole UTF-8 sequences are ever appended.
        unsafe { core::str::from_utf8_unchecked(&self.buf[..self.len]) }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True if something did not fit and was cut off.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Empties the string.
    pub fn clear(&mut self) -> &mut Self {
        self.len = 0;
        self.overflowed = false;
        self
    }

    /// Appends `s`, or as much of it as fits, up to a character boundary.
    pub fn push_str(&mut self, s: &str) -> &mut Self {
        let mut n = s.len().min(N - self.len);
        if n < s.len() {
            self.overflowed = true;
            while !s.is_char_boundary(n) {
                n -= 1;
            }
        }
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        self
    }

    /// Appends one character.
    pub fn push_char(&mut self, c: char) -> &mut Self {
        let mut tmp = [0u8; 4];
        self.push_str(c.encode_utf8(&mut tmp))
    }

    /// Appends an integer in decimal.
    pub fn push_int(&mut self, v: i64) -> &mut Self {
        let mut tmp = [0u8; 20];
        let mut i = tmp.len();
        let mut u = v.unsigned_abs();
        loop {
            i -= 1;
            tmp[i] = b'0' + (u % 10) as u8;
            u /= 10;
            if u == 0 {
                break;
            }
        }
        if v < 0 {
            self.push_str("-");
        }
        // SAFETY: ASCII digits.
        self.push_str(unsafe { core::str::from_utf8_unchecked(&tmp[i..]) })
    }

    /// Appends `v / 10^decimals` with exactly `decimals` digits after the
    /// point (at most 18; no point for 0): `push_scaled(-1234, 2)` is
    /// `-12.34`, `push_scaled(5, 3)` is `0.005`. Integer arithmetic only, so
    /// every language's SDK writes the same text.
    pub fn push_scaled(&mut self, v: i64, decimals: u32) -> &mut Self {
        let decimals = decimals.min(18) as usize;
        let mut tmp = [0u8; 24];
        let mut n = 0;
        let mut u = v.unsigned_abs();
        while u != 0 || n <= decimals {
            tmp[n] = b'0' + (u % 10) as u8;
            u /= 10;
            n += 1;
        }
        if v < 0 {
            self.push_str("-");
        }
        while n > 0 {
            n -= 1;
            // SAFETY: one ASCII digit.
            self.push_str(unsafe { core::str::from_utf8_unchecked(&tmp[n..n + 1]) });
            if n == decimals && n > 0 {
                self.push_str(".");
            }
        }
        self
    }

    /// Appends `v` rounded to `decimals` digits after the point (at most 9),
    /// e.g. `push_fixed(-3.14159, 2)` is `-3.14`: `r = floor(|v| *
    /// 10^decimals + 0.5)` in f64, written as [`push_scaled`](StrBuf::push_scaled)
    /// writes it (negative if `v` is, unless `r` is 0). NaN, infinities and
    /// values with `|v| * 10^decimals >= 1e18` are written as `null`. The
    /// other SDKs' fixed-point writers use the same arithmetic, so they agree
    /// to the byte.
    pub fn push_fixed(&mut self, v: f64, decimals: u32) -> &mut Self {
        const POW10: [f64; 10] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];
        let decimals = decimals.min(9);
        let x = if v < 0.0 { -v } else { v } * POW10[decimals as usize];
        if !(x < 1e18) {
            return self.push_str("null");
        }
        let r = crate::floor(x + 0.5) as i64;
        self.push_scaled(if v < 0.0 { -r } else { r }, decimals)
    }

    /// Appends `true` or `false`.
    pub fn push_bool(&mut self, b: bool) -> &mut Self {
        self.push_str(if b { "true" } else { "false" })
    }

    /// Appends `s` as a JSON string, quotes included, escaping `"`, `\` and
    /// control characters.
    pub fn push_json_str(&mut self, s: &str) -> &mut Self {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        self.push_str("\"");
        for c in s.chars() {
            match c {
                '"' => self.push_str("\\\""),
                '\\' => self.push_str("\\\\"),
                '\n' => self.push_str("\\n"),
                '\r' => self.push_str("\\r"),
                '\t' => self.push_str("\\t"),
                c if (c as u32) < 0x20 => {
                    let b = c as u32 as usize;
                    let esc = [b'\\', b'u', b'0', b'0', HEX[b >> 4], HEX[b & 15]];
                    // SAFETY: ASCII.
                    self.push_str(unsafe { core::str::from_utf8_unchecked(&esc) })
                }
                c => self.push_char(c),
            };
        }
        self.push_str("\"")
    }
}

impl<const N: usize> core::fmt::Write for StrBuf<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.push_str(s);
        if self.overflowed {
            Err(core::fmt::Error)
        } else {
            Ok(())
        }
    }
}

impl<const N: usize> core::ops::Deref for StrBuf<N> {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds() {
        let mut b = StrBuf::<64>::new();
        b.push_str("{\"digit\":\"").push_char('#').push_str("\",\"enabled\":").push_bool(false).push_str("}");
        assert_eq!(b.as_str(), r##"{"digit":"#","enabled":false}"##);
        b.clear().push_int(i64::MIN);
        assert_eq!(&*b, "-9223372036854775808");
        b.clear().push_int(0).push_str(" ").push_int(42);
        assert_eq!(b.as_str(), "0 42");
        b.clear().push_json_str("a\"\\\n\u{1}é");
        assert_eq!(b.as_str(), r#""a\"\\\n\u0001é""#);
        assert!(!b.overflowed());
    }

    #[test]
    fn decimals() {
        let mut b = StrBuf::<128>::new();
        for (v, d, want) in [
            (-1234i64, 2u32, "-12.34"),
            (5, 3, "0.005"),
            (-5, 2, "-0.05"),
            (0, 2, "0.00"),
            (42, 0, "42"),
            (i64::MIN, 0, "-9223372036854775808"),
            (i64::MAX, 18, "9.223372036854775807"),
        ] {
            assert_eq!(b.clear().push_scaled(v, d).as_str(), want, "scaled({}, {})", v, d);
        }
        for (v, d, want) in [
            (-3.14159, 2u32, "-3.14"),
            (2.5, 0, "3"),
            (-2.5, 0, "-3"),
            (0.125, 2, "0.13"),
            (-0.004, 2, "0.00"),
            (-0.0, 1, "0.0"),
            (1.005, 2, "1.00"), // 1.005 is 1.00499999999999989... in f64
            (123456.789, 9, "123456.789000000"),
            (f64::NAN, 2, "null"),
            (f64::NEG_INFINITY, 2, "null"),
            (1e18, 0, "null"),
            (-6.0206, 2, "-6.02"),
        ] {
            assert_eq!(b.clear().push_fixed(v, d).as_str(), want, "fixed({}, {})", v, d);
        }
    }

    #[test]
    fn cuts_at_char_boundary() {
        let mut b = StrBuf::<4>::new();
        b.push_str("abé€");
        assert_eq!(b.as_str(), "abé");
        assert!(b.overflowed());
    }
}
