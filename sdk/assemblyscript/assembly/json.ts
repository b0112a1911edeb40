// Reading the JSON the host writes into the buffer: the config object
// (vox_init) and the call metadata (call_start). Top-level members of one
// object are looked up by key, without allocation (except string()).

import { BUFFER } from "./buffer";
import { KEY_SCRATCH, KEY_SCRATCH_BYTES, LOG_SCRATCH, POW10 } from "./internal";
import { MaxLogLen } from "./abi";
import { encodeUTF8, hostLog } from "./host";

/** What a member holds, by JsonView.kind(key). */
export enum JsonKind {
  /** The key is not a member (or the text is not an object). */
  Absent = 0,
  Null = 1,
  Bool = 2,
  Number = 3,
  String = 4,
  Object = 5,
  Array = 6,
  /** A member whose value is not valid JSON. */
  Invalid = 7,
}

// @ts-ignore: decorator
@inline
function isSpace(c: u32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d;
}

// @ts-ignore: decorator
@inline
function isDigit(c: u32): bool {
  return c - 0x30 < 10;
}

function skipSpace(p: usize, end: usize): usize {
  while (p < end && isSpace(load<u8>(p))) p++;
  return p;
}

/** At an opening quote: returns the address after the closing quote, or 0. */
function skipString(p: usize, end: usize): usize {
  for (p++; p < end; p++) {
    const c = load<u8>(p);
    if (c == 0x22) return p + 1;
    if (c == 0x5c) p++;
  }
  return 0;
}

/** Skips one value of any kind; returns the address after it, or 0 if malformed. */
function skipValue(p: usize, end: usize): usize {
  if (p >= end) return 0;
  const c = load<u8>(p);
  if (c == 0x22) return skipString(p, end);
  if (c == 0x7b || c == 0x5b) {
    let depth = 0;
    while (p < end) {
      const d = load<u8>(p);
      if (d == 0x22) {
        p = skipString(p, end);
        if (p == 0) return 0;
        continue;
      }
      if (d == 0x7b || d == 0x5b) depth++;
      else if (d == 0x7d || d == 0x5d) {
        if (--depth == 0) return p + 1;
      }
      p++;
    }
    return 0;
  }
  const start = p;
  while (p < end) {
    const d = load<u8>(p);
    if (d == 0x2c || d == 0x7d || d == 0x5d || isSpace(d)) break;
    p++;
  }
  return p > start ? p : 0;
}

/** True if the bytes [p, p+n) equal the literal lit (ASCII). */
function matches(p: usize, end: usize, lit: string): bool {
  const n = lit.length;
  if (p + <usize>n > end) return false;
  for (let i = 0; i < n; i++) {
    if (<u32>load<u8>(p + <usize>i) != <u32>lit.charCodeAt(i)) return false;
  }
  // The literal must end there: true1 is not true.
  const q = p + <usize>n;
  if (q < end) {
    const c = load<u8>(q);
    if (!(c == 0x2c || c == 0x7d || c == 0x5d || isSpace(c))) return false;
  }
  return true;
}

/**
 * Parses the JSON number at [p, end). Returns NaN if it is not one. The result
 * is correctly rounded (as Go's strconv.ParseFloat) for up to 15 significant
 * digits with a decimal exponent within ±22 — every number a person writes
 * in a config — and within a few ulps beyond.
 */
export function parseNumber(p: usize, end: usize): f64 {
  let neg = false;
  if (p < end && load<u8>(p) == 0x2d) {
    neg = true;
    p++;
  }
  let mant: u64 = 0;
  let sig = 0; // significant digits kept in mant
  let exp10 = 0; // value = mant * 10^exp10
  let exact = true;
  let digits = 0;
  // Integer part: 0, or a nonzero digit then digits.
  if (p < end && load<u8>(p) == 0x30) {
    p++;
    digits++;
  } else {
    while (p < end && isDigit(load<u8>(p))) {
      const d = <u64>(load<u8>(p) - 0x30);
      if (sig < 19) {
        mant = mant * 10 + d;
        if (mant != 0) sig++;
      } else {
        exp10++;
        if (d != 0) exact = false;
      }
      p++;
      digits++;
    }
  }
  if (digits == 0) return NaN;
  if (p < end && load<u8>(p) == 0x2e) {
    p++;
    let frac = 0;
    while (p < end && isDigit(load<u8>(p))) {
      const d = <u64>(load<u8>(p) - 0x30);
      if (sig < 19) {
        mant = mant * 10 + d;
        if (mant != 0) sig++;
        exp10--;
      } else if (d != 0) {
        exact = false;
      }
      p++;
      frac++;
    }
    if (frac == 0) return NaN;
  }
  if (p < end && (load<u8>(p) | 0x20) == 0x65) {
    p++;
    let eneg = false;
    if (p < end && (load<u8>(p) == 0x2d || load<u8>(p) == 0x2b)) {
      eneg = load<u8>(p) == 0x2d;
      p++;
    }
    let e = 0;
    let edigits = 0;
    while (p < end && isDigit(load<u8>(p))) {
      if (e < 100000) e = e * 10 + <i32>(load<u8>(p) - 0x30);
      p++;
      edigits++;
    }
    if (edigits == 0) return NaN;
    exp10 += eneg ? -e : e;
  }
  if (p != end) return NaN;
  let v: f64;
  if (mant == 0) {
    v = 0;
  } else if (exact && mant <= (<u64>1 << 53) && exp10 >= -22 && exp10 <= 22) {
    // Both operands are exact doubles: one IEEE operation rounds correctly.
    v = exp10 >= 0 ? <f64>mant * unchecked(POW10[exp10]) : <f64>mant / unchecked(POW10[-exp10]);
  } else {
    v = <f64>mant;
    while (exp10 > 22) {
      v *= 1e22;
      exp10 -= 22;
    }
    while (exp10 < -22) {
      v /= 1e22;
      exp10 += 22;
    }
    v = exp10 >= 0 ? v * unchecked(POW10[exp10]) : v / unchecked(POW10[-exp10]);
  }
  return neg ? -v : v;
}

/**
 * Decodes the JSON string at p (at its opening quote) into UTF-8 (utf16 false)
 * or UTF-16 code units (utf16 true) at out, at most cap bytes; out 0 only
 * counts. Returns the bytes written (or needed), or -1 if malformed or too long.
 */
function unescape(p: usize, end: usize, out: usize, cap: i32, utf16: bool): i32 {
  let n = 0;
  for (p++; p < end; ) {
    let c = <u32>load<u8>(p++);
    if (c == 0x22) return n;
    if (c == 0x5c) {
      if (p >= end) return -1;
      const e = <u32>load<u8>(p++);
      if (e == 0x6e) c = 0x0a;
      else if (e == 0x74) c = 0x09;
      else if (e == 0x72) c = 0x0d;
      else if (e == 0x62) c = 0x08;
      else if (e == 0x66) c = 0x0c;
      else if (e == 0x75) {
        c = 0;
        if (p + 4 > end) return -1;
        for (let k = 0; k < 4; k++) {
          const h = <u32>load<u8>(p++);
          let d: u32;
          if (isDigit(h)) d = h - 0x30;
          else if ((h | 0x20) - 0x61 < 6) d = (h | 0x20) - 0x61 + 10;
          else return -1;
          c = (c << 4) | d;
        }
        // A surrogate pair written as two escapes.
        if (c >= 0xd800 && c < 0xdc00 && p + 6 <= end && load<u8>(p) == 0x5c && load<u8>(p + 1) == 0x75) {
          let lo: u32 = 0;
          let ok = true;
          for (let k: usize = 2; k < 6; k++) {
            const h = <u32>load<u8>(p + k);
            if (isDigit(h)) lo = (lo << 4) | (h - 0x30);
            else if ((h | 0x20) - 0x61 < 6) lo = (lo << 4) | ((h | 0x20) - 0x61 + 10);
            else ok = false;
          }
          if (ok && lo >= 0xdc00 && lo < 0xe000) {
            c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
          }
        }
        if (c >= 0xd800 && c < 0xe000) c = 0xfffd;
      } else c = e; // \" \\ \/
    } else if (c >= 0x80) {
      // Copy a UTF-8 sequence: find its code point for UTF-16 output.
      let more = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
      c &= more == 3 ? 0x07 : more == 2 ? 0x0f : 0x1f;
      if (<usize>more > end - p) return -1;
      for (; more > 0; more--) c = (c << 6) | (<u32>load<u8>(p++) & 0x3f);
    }
    if (utf16) {
      const units = c >= 0x10000 ? 2 : 1;
      if (n + units * 2 > cap) return -1;
      if (out) {
        if (units == 2) {
          store<u16>(out + n, <u16>(0xd800 + ((c - 0x10000) >> 10)));
          store<u16>(out + n + 2, <u16>(0xdc00 + ((c - 0x10000) & 0x3ff)));
        } else {
          store<u16>(out + n, <u16>c);
        }
      }
      n += units * 2;
    } else {
      const bytes = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
      if (n + bytes > cap) return -1;
      if (out) {
        if (bytes == 1) store<u8>(out + n, <u8>c);
        else if (bytes == 2) {
          store<u8>(out + n, <u8>(0xc0 | (c >> 6)));
          store<u8>(out + n + 1, <u8>(0x80 | (c & 0x3f)));
        } else if (bytes == 3) {
          store<u8>(out + n, <u8>(0xe0 | (c >> 12)));
          store<u8>(out + n + 1, <u8>(0x80 | ((c >> 6) & 0x3f)));
          store<u8>(out + n + 2, <u8>(0x80 | (c & 0x3f)));
        } else {
          store<u8>(out + n, <u8>(0xf0 | (c >> 18)));
          store<u8>(out + n + 1, <u8>(0x80 | ((c >> 12) & 0x3f)));
          store<u8>(out + n + 2, <u8>(0x80 | ((c >> 6) & 0x3f)));
          store<u8>(out + n + 3, <u8>(0x80 | (c & 0x3f)));
        }
      }
      n += bytes;
    }
  }
  return -1;
}

// The member scanMember last read: its key (after the opening quote), the
// key's length in bytes, and its value's address (0 if malformed).
let memberKey: usize = 0;
let memberKeyLen: i32 = 0;
let memberValue: usize = 0;
// The length of the key unknownKey last returned.
let unknownLen: i32 = 0;

/** Length in bytes of the key JsonView.unknownKey last returned. */
export function unknownKeyLength(): i32 {
  return unknownLen;
}

/** The address of the first member's key (its opening quote), or 0 if the object is empty or not one. */
function firstMember(ptr: usize, end: usize): usize {
  let p = skipSpace(ptr, end);
  if (p >= end || load<u8>(p) != 0x7b) return 0;
  p = skipSpace(p + 1, end);
  return p < end && load<u8>(p) == 0x22 ? p : 0;
}

/**
 * Reads the member whose key's opening quote is at p into memberKey,
 * memberKeyLen and memberValue (0 if the member is malformed), and returns
 * the address of the next member's key, or 0 if there is none.
 */
function scanMember(p: usize, end: usize): usize {
  memberValue = 0;
  const kend = skipString(p, end);
  if (kend == 0) return 0;
  memberKey = p + 1;
  memberKeyLen = <i32>(kend - 1 - memberKey);
  p = skipSpace(kend, end);
  if (p >= end || load<u8>(p) != 0x3a) return 0;
  p = skipSpace(p + 1, end);
  if (p >= end) return 0;
  memberValue = p;
  p = skipValue(p, end);
  if (p == 0) return 0;
  p = skipSpace(p, end);
  if (p >= end || load<u8>(p) != 0x2c) return 0;
  p = skipSpace(p + 1, end);
  return p < end && load<u8>(p) == 0x22 ? p : 0;
}

/**
 * A view of one JSON object in memory — by default the config or the call
 * metadata the host wrote into the buffer — whose top-level members are read
 * by key. Keys are compared byte for byte with the key's UTF-8 (write keys in
 * the JSON without escapes); the first of duplicate keys wins. The view does
 * not copy: read what you need in vox_init / on call_start, before the host
 * overwrites the buffer.
 *
 *     const c = config(len);
 *     const rate = c.number("rate_hz", 4.0);   // NaN if present but not a number
 *     if (!(rate >= 0.1 && rate <= 20)) return StatusBadConfig;
 */
@unmanaged
export class JsonView {
  /** Address of the JSON text. */
  ptr: usize;
  /** Its length in bytes. */
  len: i32;

  /**
   * Address of the value of member key, or 0 if there is none (or the text
   * is not a JSON object).
   */
  find(key: string): usize {
    let klen = encodeUTF8(key, KEY_SCRATCH, 0, KEY_SCRATCH_BYTES);
    if (klen < 0) return 0;
    const end = this.ptr + <usize>this.len;
    for (let p = firstMember(this.ptr, end); p != 0; ) {
      const next = scanMember(p, end);
      if (memberValue == 0) return 0;
      if (memberKeyLen == klen && memory.compare(memberKey, KEY_SCRATCH, <usize>klen) == 0) return memberValue;
      p = next;
    }
    return 0;
  }

  /**
   * The keys of the object, in order, as written between their quotes
   * (escapes not decoded). Allocates: call it in vox_init, not per frame.
   */
  keys(): string[] {
    const keys = new Array<string>();
    const end = this.ptr + <usize>this.len;
    for (let p = firstMember(this.ptr, end); p != 0; ) {
      const next = scanMember(p, end);
      if (memberValue == 0) break;
      keys.push(String.UTF8.decodeUnsafe(memberKey, <usize>memberKeyLen));
      p = next;
    }
    return keys;
  }

  /**
   * Address of the first key (after its opening quote) that is not in
   * allowed, or 0 if every key is; unknownKeyLength() is its length in
   * bytes. No allocation.
   */
  unknownKey(allowed: StaticArray<string>): usize {
    const end = this.ptr + <usize>this.len;
    for (let p = firstMember(this.ptr, end); p != 0; ) {
      const next = scanMember(p, end);
      if (memberValue == 0) break;
      let known = false;
      for (let i = 0; i < allowed.length && !known; i++) {
        const n = encodeUTF8(unchecked(allowed[i]), KEY_SCRATCH, 0, KEY_SCRATCH_BYTES);
        known = n == memberKeyLen && memory.compare(memberKey, KEY_SCRATCH, <usize>n) == 0;
      }
      if (!known) {
        unknownLen = memberKeyLen;
        return memberKey;
      }
      p = next;
    }
    unknownLen = 0;
    return 0;
  }

  /**
   * unknownKey as vox_init uses it: true if every key is in allowed;
   * otherwise logs `PLUGIN: unknown config key "KEY"` at error level and
   * returns false (then return StatusBadConfig). No allocation (but for the
   * log scratch, taken from the heap once: internal.ts).
   *
   *     if (!c.checkKeys("clipper", ["threshold_db", "mode", "report"])) return StatusBadConfig;
   */
  checkKeys(plugin: string, allowed: StaticArray<string>): bool {
    const key = this.unknownKey(allowed);
    if (key == 0) return true;
    const scratch = LOG_SCRATCH();
    let n = encodeUTF8(plugin, scratch, 0, MaxLogLen - 64);
    if (n < 0) n = -n - 1;
    n = encodeUTF8(': unknown config key "', scratch, n, MaxLogLen);
    const k = min(unknownLen, MaxLogLen - 1 - n);
    memory.copy(scratch + <usize>n, key, <usize>k);
    n += k;
    store<u8>(scratch + <usize>n, 0x22);
    hostLog(3, scratch, n + 1); // LogError
    return false;
  }

  /** True if key is a member (whatever its value, null included). */
  has(key: string): bool {
    return this.find(key) != 0;
  }

  /** The kind of value member key holds. */
  kind(key: string): JsonKind {
    const p = this.find(key);
    if (p == 0) return JsonKind.Absent;
    const end = this.ptr + <usize>this.len;
    const c = load<u8>(p);
    if (c == 0x22) return skipString(p, end) ? JsonKind.String : JsonKind.Invalid;
    if (c == 0x7b) return JsonKind.Object;
    if (c == 0x5b) return JsonKind.Array;
    if (matches(p, end, "true") || matches(p, end, "false")) return JsonKind.Bool;
    if (matches(p, end, "null")) return JsonKind.Null;
    const q = skipValue(p, end);
    if (q != 0 && !isNaN(parseNumber(p, q))) return JsonKind.Number;
    return JsonKind.Invalid;
  }

  /**
   * The number member key holds; fallback if key is absent; NaN if it holds
   * anything else (so a range check `!(x >= lo && x <= hi)` rejects it).
   */
  number(key: string, fallback: f64 = NaN): f64 {
    const p = this.find(key);
    if (p == 0) return fallback;
    const q = skipValue(p, this.ptr + <usize>this.len);
    return q == 0 ? NaN : parseNumber(p, q);
  }

  /**
   * The boolean member key holds; fallback if key is absent or holds
   * something else (check kind(key) to tell these apart).
   */
  bool(key: string, fallback: bool = false): bool {
    const p = this.find(key);
    if (p == 0) return fallback;
    const end = this.ptr + <usize>this.len;
    if (matches(p, end, "true")) return true;
    if (matches(p, end, "false")) return false;
    return fallback;
  }

  /**
   * Copies the string member key holds into out (at most cap bytes), decoded
   * (escapes resolved) as UTF-8. Returns its length, or -1 if key is absent,
   * not a string, or does not fit. No allocation.
   */
  stringInto(key: string, out: usize, cap: i32): i32 {
    const p = this.find(key);
    if (p == 0 || load<u8>(p) != 0x22) return -1;
    return unescape(p, this.ptr + <usize>this.len, out, cap, false);
  }

  /**
   * The string member key holds, decoded; null if key is absent or not a
   * string. Allocates the string: call it in vox_init or on call_start, not
   * per frame (the stub runtime never frees).
   */
  string(key: string): string | null {
    const p = this.find(key);
    if (p == 0 || load<u8>(p) != 0x22) return null;
    const end = this.ptr + <usize>this.len;
    const size = unescape(p, end, 0, i32.MAX_VALUE, true);
    if (size < 0) return null;
    const s = changetype<string>(__new(<usize>size, idof<string>()));
    unescape(p, end, changetype<usize>(s), size, true);
    return s;
  }

  /**
   * Narrows this view to the object member key holds (e.g. "params" of the
   * call metadata) and returns true; returns false and leaves the view as it
   * was if key is absent or not an object.
   */
  enter(key: string): bool {
    const p = this.find(key);
    if (p == 0 || load<u8>(p) != 0x7b) return false;
    const q = skipValue(p, this.ptr + <usize>this.len);
    if (q == 0) return false;
    this.ptr = p;
    this.len = <i32>(q - p);
    return true;
  }
}

const VIEW: usize = memory.data(offsetof<JsonView>(), 8);

/**
 * A view of the len bytes of JSON at ptr. The SDK has one view: each call of
 * json, config or metadata repoints it.
 */
export function json(ptr: usize, len: i32): JsonView {
  const v = changetype<JsonView>(VIEW);
  v.ptr = ptr;
  v.len = len;
  return v;
}

/** The config object vox_init(config_len) finds in the buffer. */
export function config(config_len: i32): JsonView {
  return json(BUFFER, config_len);
}

/** The call metadata vox_event(EventCallStart, len) finds in the buffer. */
export function metadata(len: i32): JsonView {
  return json(BUFFER, len);
}
