//! A tiny reader for flat JSON objects: the plugin config and the call
//! metadata. It finds members of the top-level object by key and reads
//! numbers, booleans and strings, like the C SDK's `vox_config_*` helpers,
//! without allocating. It trusts the host to pass well-formed JSON.

/// A JSON object the host wrote into the frame buffer: the configuration in
/// [`Plugin::init`](crate::Plugin::init), the metadata of
/// [`Event::CallStart`](crate::Event::CallStart) (`Config::new(metadata)`).
///
/// Keys are matched at the top level only, byte for byte (escapes in keys
/// are not decoded); with a duplicate key the first member counts.
#[derive(Clone, Copy, Debug)]
pub struct Config<'a> {
    json: &'a [u8],
}

#[inline]
fn is_ws(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\n' || c == b'\r'
}

/// Powers of ten that f64 holds exactly.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
    1e20, 1e21, 1e22,
];

impl<'a> Config<'a> {
    /// Reads the JSON object in `json`.
    pub const fn new(json: &'a [u8]) -> Self {
        Config { json }
    }

    /// The JSON text, as the host wrote it.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.json
    }

    /// True if the object has no members (`{}`, whitespace aside).
    pub fn is_empty(&self) -> bool {
        let mut it = self.json.iter().copied().filter(|&c| !is_ws(c));
        matches!((it.next(), it.next(), it.next()), (Some(b'{'), Some(b'}'), None))
    }

    /// Offset of the value of `key` in the top-level object, if present.
    fn find(&self, key: &str) -> Option<usize> {
        let mut pos = 0;
        while let Some((k, value)) = next_key(self.json, &mut pos) {
            if k == key.as_bytes() {
                let mut i = value;
                while i < self.json.len() && is_ws(self.json[i]) {
                    i += 1;
                }
                return Some(i);
            }
        }
        None
    }

    /// The keys of the top-level object, in order, as written (escapes are
    /// not decoded; a key that is not valid UTF-8 is left out). Allocates
    /// nothing:
    ///
    /// ```
    /// let c = voxhost::Config::new(br#"{"a":1,"b":{"c":2},"d":"e"}"#);
    /// let mut keys = c.keys();
    /// assert_eq!((keys.next(), keys.next(), keys.next(), keys.next()), (Some("a"), Some("b"), Some("d"), None));
    /// ```
    pub fn keys(&self) -> Keys<'a> {
        Keys { json: self.json, pos: 0 }
    }

    /// The first key that is not in `allowed`, or `None` if every key is:
    /// with it a typo'd key is an error rather than silently the default.
    pub fn unknown_key(&self, allowed: &[&str]) -> Option<&'a str> {
        let mut pos = 0;
        while let Some((k, _)) = next_key(self.json, &mut pos) {
            if !allowed.iter().any(|a| a.as_bytes() == k) {
                // A key that is not UTF-8 is unknown too; name it as best we can.
                return Some(core::str::from_utf8(k).unwrap_or("\u{fffd}"));
            }
        }
        None
    }

    /// [`unknown_key`](Config::unknown_key) as `init` uses it: `Ok(())`, or
    /// logs `PLUGIN: unknown config key "KEY"` at error level and returns
    /// `Err(Status::BAD_CONFIG)`:
    ///
    /// ```
    /// # fn init(config: &voxhost::Config) -> Result<(), voxhost::Status> {
    /// config.check_keys("clipper", &["threshold_db", "mode", "report"])?;
    /// # Ok(()) }
    /// ```
    pub fn check_keys(&self, plugin: &str, allowed: &[&str]) -> Result<(), crate::Status> {
        match self.unknown_key(allowed) {
            None => Ok(()),
            Some(key) => {
                let mut msg = crate::StrBuf::<160>::new();
                msg.push_str(plugin).push_str(": unknown config key ").push_json_str(key);
                crate::error(&msg);
                Err(crate::Status::BAD_CONFIG)
            }
        }
    }

    /// True if the top-level object has a member named `key`, of any type.
    pub fn contains(&self, key: &str) -> bool {
        self.find(key).is_some()
    }

    /// The number `key` holds; `None` if it is absent or holds another type.
    ///
    /// The result is correctly rounded (the same double as a full JSON
    /// parser gives) for numbers of up to 19 significant digits whose value
    /// is an integer below 2^53 scaled by 10^-22 to 10^22, which covers any
    /// hand-written configuration (`0.8`, `12.5`, `1e-3`); others are within
    /// a few units in the last place.
    pub fn number(&self, key: &str) -> Option<f64> {
        let i = self.find(key)?;
        parse_number(&self.json[i..])
    }

    /// `Some(default)` if `key` is absent, `Some(x)` if it holds the number
    /// x, `None` if it holds another type: the usual reading of an optional
    /// setting.
    pub fn number_or(&self, key: &str, default: f64) -> Option<f64> {
        match self.find(key) {
            None => Some(default),
            Some(i) => parse_number(&self.json[i..]),
        }
    }

    /// The boolean `key` holds; `None` if it is absent or holds another type.
    pub fn bool(&self, key: &str) -> Option<bool> {
        let i = self.find(key)?;
        parse_bool(&self.json[i..])
    }

    /// Like [`number_or`](Config::number_or), for a boolean.
    pub fn bool_or(&self, key: &str, default: bool) -> Option<bool> {
        match self.find(key) {
            None => Some(default),
            Some(i) => parse_bool(&self.json[i..]),
        }
    }

    /// The string `key` holds, as written between its quotes: escape
    /// sequences are not decoded (`"a\"b"` gives `a\"b`). `None` if the key is
    /// absent, holds another type, or is not valid UTF-8. Use
    /// [`str_into`](Config::str_into) to decode escapes.
    pub fn str(&self, key: &str) -> Option<&'a str> {
        let j = self.json;
        let mut i = self.find(key)?;
        if j[i] != b'"' {
            return None;
        }
        i += 1;
        let start = i;
        while i < j.len() && j[i] != b'"' {
            i += if j[i] == b'\\' { 2 } else { 1 };
        }
        if i >= j.len() {
            return None;
        }
        core::str::from_utf8(&j[start..i]).ok()
    }

    /// Decodes the string `key` holds into `out` and returns it, escapes
    /// (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\uXXXX`) decoded.
    /// `None` if the key is absent, holds another type, or does not fit.
    pub fn str_into<'o>(&self, key: &str, out: &'o mut [u8]) -> Option<&'o str> {
        let raw = self.str(key)?.as_bytes();
        let mut n = 0usize;
        let mut i = 0usize;
        let mut put = |bytes: &[u8], n: &mut usize| -> Option<()> {
            let dst = out.get_mut(*n..*n + bytes.len())?;
            dst.copy_from_slice(bytes);
            *n += bytes.len();
            Some(())
        };
        while i < raw.len() {
            let c = raw[i];
            i += 1;
            if c != b'\\' {
                put(&[c], &mut n)?;
                continue;
            }
            let e = *raw.get(i)?;
            i += 1;
            let simple = match e {
                b'"' => b'"',
                b'\\' => b'\\',
                b'/' => b'/',
                b'b' => 8,
                b'f' => 12,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'u' => 0,
                _ => return None,
            };
            if e != b'u' {
                put(&[simple], &mut n)?;
                continue;
            }
            let mut cp = hex4(raw.get(i..i + 4)?)?;
            i += 4;
            if (0xD800..0xDC00).contains(&cp) && raw.get(i..i + 2) == Some(b"\\u") {
                let lo = hex4(raw.get(i + 2..i + 6)?)?;
                if (0xDC00..0xE000).contains(&lo) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
            let mut tmp = [0u8; 4];
            put(ch.encode_utf8(&mut tmp).as_bytes(), &mut n)?;
        }
        // Only whole UTF-8 sequences were copied from a &str or encoded.
        core::str::from_utf8(&out[..n]).ok()
    }
}

/// The keys of a [`Config`]'s top-level object, from [`Config::keys`].
#[derive(Clone, Debug)]
pub struct Keys<'a> {
    json: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Keys<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        while let Some((k, _)) = next_key(self.json, &mut self.pos) {
            if let Ok(k) = core::str::from_utf8(k) {
                return Some(k);
            }
        }
        None
    }
}

/// The next key of the top-level object from `*pos` (0: the start of the
/// text): the key as written and the offset just after its `:`, where its
/// value begins. `*pos` moves there; at the end it is past the text.
fn next_key<'a>(j: &'a [u8], pos: &mut usize) -> Option<(&'a [u8], usize)> {
    let len = j.len();
    let mut i = *pos;
    if i == 0 {
        // Step inside the object.
        while i < len && j[i] != b'{' {
            i += 1;
        }
        i += 1;
    }
    let mut depth = 0i32;
    while i < len {
        let c = j[i];
        if c == b'{' || c == b'[' {
            depth += 1;
            i += 1;
            continue;
        }
        if c == b'}' || c == b']' {
            if depth == 0 {
                break; // the end of the top-level object
            }
            depth -= 1;
            i += 1;
            continue;
        }
        if c != b'"' {
            i += 1;
            continue;
        }
        i += 1;
        let start = i;
        while i < len && j[i] != b'"' {
            i += if j[i] == b'\\' { 2 } else { 1 };
        }
        let end = i.min(len);
        i += 1;
        let mut k = i;
        while k < len && is_ws(j[k]) {
            k += 1;
        }
        if depth == 0 && k < len && j[k] == b':' {
            *pos = k + 1;
            return Some((&j[start..end], k + 1));
        }
        // A string value (or a key of a nested object): go on after it.
    }
    *pos = len + 1;
    None
}

fn hex4(h: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in h {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = v * 16 + d as u32;
    }
    Some(v)
}

fn parse_bool(s: &[u8]) -> Option<bool> {
    if s.starts_with(b"true") {
        Some(true)
    } else if s.starts_with(b"false") {
        Some(false)
    } else {
        None
    }
}

/// Parses the number at the start of `s`: optional sign, digits, optional
/// fraction and exponent (as lenient as the C SDK: `+1` and `01` pass).
fn parse_number(s: &[u8]) -> Option<f64> {
    let len = s.len();
    let mut i = 0;
    let mut negative = false;
    if i < len && (s[i] == b'-' || s[i] == b'+') {
        negative = s[i] == b'-';
        i += 1;
    }
    // The significant digits as an integer (at most 19, which fit in a u64),
    // and the power of ten that scales it.
    let (mut mant, mut sig, mut exp10, mut digits) = (0u64, 0u32, 0i32, 0u32);
    let mut inexact = false;
    let mut digit = |d: u8, frac: bool, mant: &mut u64, exp10: &mut i32| {
        if sig < 19 {
            *mant = *mant * 10 + (d - b'0') as u64;
            if *mant != 0 {
                sig += 1;
            }
            if frac {
                *exp10 -= 1;
            }
        } else {
            inexact |= d != b'0';
            if !frac {
                *exp10 += 1;
            }
        }
    };
    while i < len && s[i].is_ascii_digit() {
        digit(s[i], false, &mut mant, &mut exp10);
        digits += 1;
        i += 1;
    }
    if i < len && s[i] == b'.' {
        i += 1;
        while i < len && s[i].is_ascii_digit() {
            digit(s[i], true, &mut mant, &mut exp10);
            digits += 1;
            i += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < len && (s[i] == b'e' || s[i] == b'E') {
        i += 1;
        let mut eneg = false;
        if i < len && (s[i] == b'-' || s[i] == b'+') {
            eneg = s[i] == b'-';
            i += 1;
        }
        let mut e = 0i32;
        while i < len && s[i].is_ascii_digit() {
            e = (e * 10 + (s[i] - b'0') as i32).min(100_000);
            i += 1;
        }
        exp10 += if eneg { -e } else { e };
    }
    while mant != 0 && mant % 10 == 0 && !inexact {
        mant /= 10;
        exp10 += 1;
    }
    let mut v = mant as f64;
    if mant == 0 {
        v = 0.0;
    } else if !inexact && mant <= 1 << 53 && (-22..=22).contains(&exp10) {
        // Exact operands, one rounding: correctly rounded (Clinger's fast path).
        v = if exp10 < 0 { v / POW10[(-exp10) as usize] } else { v * POW10[exp10 as usize] };
    } else {
        // Rare in a configuration: a few roundings.
        while exp10 > 22 && v.is_finite() {
            v *= 1e22;
            exp10 -= 22;
        }
        while exp10 < -22 && v != 0.0 {
            v /= 1e22;
            exp10 += 22;
        }
        v = if exp10 < 0 { v / POW10[(-exp10) as usize] } else { v * POW10[exp10 as usize] };
    }
    Some(if negative { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    const J: &[u8] = br#"{"rate_hz": 5, "depth":0.8, "name":"a\"b\\n\u00e9\ud83d\ude00",
        "on":true, "off" : false, "nested":{"depth":3}, "list":["depth", 1], "neg":-1.5e2, "s":"x"}"#;

    #[test]
    fn numbers() {
        let c = Config::new(J);
        assert_eq!(c.number("rate_hz"), Some(5.0));
        assert_eq!(c.number("depth"), Some(0.8));
        assert_eq!(c.number("neg"), Some(-150.0));
        assert_eq!(c.number("name"), None);
        assert_eq!(c.number("missing"), None);
        assert_eq!(c.number_or("missing", 4.0), Some(4.0));
        assert_eq!(c.number_or("on", 4.0), None);
        assert_eq!(c.number_or("s", 4.0), None);
        for (text, want) in [
            ("0.3", 0.3),
            ("0.1", 0.1),
            ("12.5", 12.5),
            ("1e-3", 1e-3),
            ("123456789.123456789", 123456789.12345679),
            ("0.000001", 0.000001),
            ("-0", -0.0),
            ("3.0000000000000000000000001", 3.0),
        ] {
            assert_eq!(parse_number(text.as_bytes()), Some(want), "{}", text);
        }
        let big = parse_number(b"1e300").unwrap();
        assert!(((big - 1e300) / 1e300).abs() < 1e-15, "{}", big);
        assert_eq!(parse_number(b"-"), None);
        assert_eq!(parse_number(b"null"), None);
    }

    #[test]
    fn correctly_rounded_like_std() {
        extern crate std;
        use std::format;
        let mut x: u64 = 0x9E3779B97F4A7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let int = (x >> 40) % 100_000;
            let frac = x % 10_000_000_000;
            let width = ((x >> 20) % 10) as usize + 1;
            let text = format!("{}.{:0width$}", int, frac % 10u64.pow(width as u32), width = width);
            let want: f64 = text.parse().unwrap();
            assert_eq!(parse_number(text.as_bytes()), Some(want), "{}", text);
            let text = format!("{}e-{}", x % 1_000_000, width);
            let want: f64 = text.parse().unwrap();
            assert_eq!(parse_number(text.as_bytes()), Some(want), "{}", text);
        }
    }

    #[test]
    fn keys_at_top_level_only() {
        let c = Config::new(br#"{"nested":{"depth":3},"x":"depth","depth":1}"#);
        assert_eq!(c.number("depth"), Some(1.0));
        let c = Config::new(br#"{"nested":{"depth":3}}"#);
        assert_eq!(c.number("depth"), None);
        assert!(!c.contains("depth"));
        assert!(c.contains("nested"));
    }

    #[test]
    fn bools_and_strings() {
        let c = Config::new(J);
        assert_eq!(c.bool("on"), Some(true));
        assert_eq!(c.bool("off"), Some(false));
        assert_eq!(c.bool("depth"), None);
        assert_eq!(c.bool_or("missing", true), Some(true));
        assert_eq!(c.str("s"), Some("x"));
        assert_eq!(c.str("name"), Some(r#"a\"b\\n\u00e9\ud83d\ude00"#));
        let mut out = [0u8; 32];
        assert_eq!(c.str_into("name", &mut out), Some("a\"b\\né😀"));
        let mut small = [0u8; 3];
        assert_eq!(c.str_into("name", &mut small), None);
        assert_eq!(c.str("depth"), None);
    }

    #[test]
    fn keys_and_unknown_keys() {
        let c = Config::new(br#" { "note" : "rate_hz", "depth" : 0.25 ,"rate_hz":4.5, "x": [1, {"depth": 1}], "o":{"k":"v"}, "q\"k":1 } "#);
        let keys: [Option<&str>; 7] = {
            let mut it = c.keys();
            [it.next(), it.next(), it.next(), it.next(), it.next(), it.next(), it.next()]
        };
        assert_eq!(keys, [Some("note"), Some("depth"), Some("rate_hz"), Some("x"), Some("o"), Some("q\\\"k"), None]);
        assert_eq!(c.unknown_key(&["note", "depth", "rate_hz", "x", "o", "q\\\"k"]), None);
        assert_eq!(c.unknown_key(&["note", "depth", "rate_hz"]), Some("x"));
        assert_eq!(c.unknown_key(&[]), Some("note"));
        assert_eq!(c.check_keys("t", &["note"]), Err(crate::Status::BAD_CONFIG));
        assert_eq!(Config::new(b"{}").unknown_key(&[]), None);
        assert_eq!(Config::new(b" {} ").keys().next(), None);
        assert_eq!(Config::new(br#"{"a":{"b":1}}"#).check_keys("t", &["a"]), Ok(()));
    }

    #[test]
    fn empty() {
        assert!(Config::new(b"{}").is_empty());
        assert!(Config::new(b" { \n } ").is_empty());
        assert!(!Config::new(b"{\"a\":1}").is_empty());
        assert_eq!(Config::new(b"{}").number("a"), None);
        assert_eq!(Config::new(b"{\"a\":").number("a"), None);
        assert_eq!(Config::new(b"{\"a").number("a"), None);
    }
}
