// The host's functions (ABI §4) and allocation-free wrappers around them.

import { MaxEmitDataLen, MaxEmitNameLen, MaxLogLen } from "./abi";
import { DATA_SCRATCH, LOG_SCRATCH, NAME_SCRATCH, POW10 } from "./internal";

/** voxhost.log(level, ptr, len): a UTF-8 message for the host log (raw import). */
// @ts-ignore: decorator
@external("voxhost", "log")
export declare function hostLog(level: i32, ptr: usize, len: i32): void;

/**
 * voxhost.emit(name_ptr, name_len, data_ptr, data_len): an event for the
 * call's client (raw import). name: 1-64 bytes of [a-z0-9_.-]; data: empty or
 * one JSON value of at most 4096 bytes.
 */
// @ts-ignore: decorator
@external("voxhost", "emit")
export declare function hostEmit(namePtr: usize, nameLen: i32, dataPtr: usize, dataLen: i32): void;

/**
 * Writes the code point c as UTF-8 at dst + n, if it fits below cap. Returns
 * the new length, or -1 if it does not fit.
 */
// @ts-ignore: decorator
@inline
function putCodePoint(dst: usize, n: i32, cap: i32, c: u32): i32 {
  if (c < 0x80) {
    if (n + 1 > cap) return -1;
    store<u8>(dst + n, <u8>c);
    return n + 1;
  }
  if (c < 0x800) {
    if (n + 2 > cap) return -1;
    store<u8>(dst + n, <u8>(0xc0 | (c >> 6)));
    store<u8>(dst + n + 1, <u8>(0x80 | (c & 0x3f)));
    return n + 2;
  }
  if (c < 0x10000) {
    if (n + 3 > cap) return -1;
    store<u8>(dst + n, <u8>(0xe0 | (c >> 12)));
    store<u8>(dst + n + 1, <u8>(0x80 | ((c >> 6) & 0x3f)));
    store<u8>(dst + n + 2, <u8>(0x80 | (c & 0x3f)));
    return n + 3;
  }
  if (n + 4 > cap) return -1;
  store<u8>(dst + n, <u8>(0xf0 | (c >> 18)));
  store<u8>(dst + n + 1, <u8>(0x80 | ((c >> 12) & 0x3f)));
  store<u8>(dst + n + 2, <u8>(0x80 | ((c >> 6) & 0x3f)));
  store<u8>(dst + n + 3, <u8>(0x80 | (c & 0x3f)));
  return n + 4;
}

/**
 * Encodes s as UTF-8 at dst + n, never beyond dst + cap and never splitting
 * a character; lone surrogates become U+FFFD. Returns the new length, or
 * -(length) - 1 if s was cut short. No allocation.
 */
export function encodeUTF8(s: string, dst: usize, n: i32, cap: i32): i32 {
  const units = s.length;
  const src = changetype<usize>(s);
  for (let i = 0; i < units; i++) {
    let c = <u32>load<u16>(src + (<usize>i << 1));
    if (c >= 0xd800 && c < 0xe000) {
      if (c < 0xdc00 && i + 1 < units) {
        const lo = <u32>load<u16>(src + (<usize>(i + 1) << 1));
        if (lo >= 0xdc00 && lo < 0xe000) {
          c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
          i++;
        } else {
          c = 0xfffd;
        }
      } else {
        c = 0xfffd;
      }
    }
    const m = putCodePoint(dst, n, cap, c);
    if (m < 0) return -n - 1;
    n = m;
  }
  return n;
}

/**
 * Logs msg at level (LogDebug .. LogError). Messages longer than 4096 bytes
 * of UTF-8 are cut, as the host would. No allocation (the first log takes
 * its 4 KiB scratch from the heap, once: internal.ts).
 */
export function log(level: i32, msg: string): void {
  const scratch = LOG_SCRATCH();
  let n = encodeUTF8(msg, scratch, 0, MaxLogLen);
  if (n < 0) n = -n - 1;
  hostLog(level, scratch, n);
}

/** Encodes an event name into its scratch; returns a length the host rejects if it does not fit. */
function encodeName(name: string): i32 {
  const n = encodeUTF8(name, NAME_SCRATCH, 0, MaxEmitNameLen);
  return n < 0 ? MaxEmitNameLen + 1 : n;
}

/**
 * Emits the event name with data, a JSON value as text ("" for none), e.g.
 * emit("dtmf", "\"5\""). A name or data longer than the host accepts
 * (64 / 4096 bytes) is passed on with a length the host refuses, so the event
 * is dropped and counted rather than cut into invalid JSON. No allocation
 * (the first emit takes its 4 KiB scratch from the heap, once: internal.ts);
 * use eventData() to build data from values.
 */
export function emit(name: string, data: string = ""): void {
  const nameLen = encodeName(name);
  const scratch = DATA_SCRATCH();
  let dataLen = encodeUTF8(data, scratch, 0, MaxEmitDataLen);
  if (dataLen < 0) dataLen = MaxEmitDataLen + 1;
  hostEmit(NAME_SCRATCH, nameLen, scratch, dataLen);
}

// State of the EventData writer.
let dataLen: i32 = 0;
let dataOverflow: bool = false;

function hexDigit(v: u32): u32 {
  return v < 10 ? 0x30 + v : 0x61 + v - 10;
}

/**
 * A builder of event data (JSON text) in a scratch area taken from the heap
 * once, at the first use: no allocation after that, so it is safe on the
 * frame path. Get it with eventData(), which
 * empties it, chain appends, then emit:
 *
 *     eventData().raw('{"digit":').quotedChar(key).raw(',"on":').bool(on).raw("}")
 *       .emit("tremolo.key");
 *
 * Data that grows past 4096 bytes is not emitted (the host would drop it).
 */
@unmanaged
export class EventData {
  /** Appends s as UTF-8, unescaped (JSON punctuation, literals, keys you trust). */
  raw(s: string): EventData {
    if (!dataOverflow) {
      const n = encodeUTF8(s, DATA_SCRATCH(), dataLen, MaxEmitDataLen);
      if (n < 0) dataOverflow = true;
      else dataLen = n;
    }
    return this;
  }

  /** Appends the code point c as UTF-8, unescaped. */
  rawChar(c: i32): EventData {
    if (!dataOverflow) {
      const n = putCodePoint(DATA_SCRATCH(), dataLen, MaxEmitDataLen, <u32>c > 0x10ffff ? 0xfffd : <u32>c);
      if (n < 0) dataOverflow = true;
      else dataLen = n;
    }
    return this;
  }

  /** Appends c inside a JSON string, escaped as JSON requires (no quotes added). */
  escapedChar(c: i32): EventData {
    if (c == 0x22 || c == 0x5c) return this.rawChar(0x5c).rawChar(c);
    if (c >= 0 && c < 0x20) {
      if (c == 0x0a) return this.raw("\\n");
      if (c == 0x0d) return this.raw("\\r");
      if (c == 0x09) return this.raw("\\t");
      return this.raw("\\u00").rawChar(hexDigit(<u32>c >> 4)).rawChar(hexDigit(<u32>c & 15));
    }
    return this.rawChar(c);
  }

  /** Appends s as a JSON string literal: quoted and escaped. */
  quoted(s: string): EventData {
    this.rawChar(0x22);
    const units = s.length;
    for (let i = 0; i < units; i++) {
      let c = <i32>s.charCodeAt(i);
      if (c >= 0xd800 && c < 0xe000) {
        const lo = i + 1 < units ? <i32>s.charCodeAt(i + 1) : 0;
        if (c < 0xdc00 && lo >= 0xdc00 && lo < 0xe000) {
          c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
          i++;
        } else {
          c = 0xfffd;
        }
      }
      this.escapedChar(c);
    }
    return this.rawChar(0x22);
  }

  /** Appends the one-character JSON string of code point c, e.g. "#" for 35. */
  quotedChar(c: i32): EventData {
    return this.rawChar(0x22).escapedChar(c).rawChar(0x22);
  }

  /** Appends true or false. */
  bool(b: bool): EventData {
    return this.raw(b ? "true" : "false");
  }

  /** Appends null. */
  null(): EventData {
    return this.raw("null");
  }

  /** Appends an integer in decimal. */
  int(v: i64): EventData {
    return this.scaled(v, 0);
  }

  /**
   * Appends v / 10^decimals with exactly `decimals` digits after the point
   * (0 to 18; no point for 0): scaled(-1234, 2) is -12.34, scaled(5, 3) is
   * 0.005. Integer arithmetic only, so every language's SDK writes the same.
   */
  scaled(v: i64, decimals: i32): EventData {
    if (decimals < 0) decimals = 0;
    if (decimals > 18) decimals = 18;
    const u: u64 = v < 0 ? <u64>0 - <u64>v : <u64>v;
    let n = 1;
    let d: u64 = 1;
    for (let t = u; t >= 10; t /= 10) {
      n++;
      d *= 10;
    }
    for (; n <= decimals; n++) d *= 10;
    if (v < 0) this.rawChar(0x2d);
    for (let i = n - 1; i >= 0; i--, d /= 10) {
      this.rawChar(0x30 + <i32>((u / d) % 10));
      if (i == decimals && i > 0) this.rawChar(0x2e);
    }
    return this;
  }

  /**
   * Appends v rounded to `decimals` digits after the point (0 to 9), e.g.
   * fixed(-3.14159, 2) is -3.14: r = floor(|v| * 10^decimals + 0.5) in f64,
   * written as scaled writes it (negative if v is, unless r is 0). NaN,
   * infinities and |v| * 10^decimals >= 1e18 are written as null. The other
   * SDKs use the same arithmetic, so they write the same text.
   */
  fixed(v: f64, decimals: i32): EventData {
    if (decimals < 0) decimals = 0;
    if (decimals > 9) decimals = 9;
    const x = (v < 0 ? -v : v) * unchecked(POW10[decimals]);
    if (!(x < 1e18)) return this.raw("null");
    const r = <i64>Math.floor(x + 0.5);
    return this.scaled(v < 0 ? -r : r, decimals);
  }

  /** Bytes written so far. */
  get length(): i32 {
    return dataLen;
  }

  /** Address of the bytes written so far. */
  get ptr(): usize {
    return DATA_SCRATCH();
  }

  /** True if an append did not fit: emit() will not send it. */
  get overflowed(): bool {
    return dataOverflow;
  }

  /** Emits the data built so far under name. */
  emit(name: string): void {
    hostEmit(NAME_SCRATCH, encodeName(name), DATA_SCRATCH(), dataOverflow ? MaxEmitDataLen + 1 : dataLen);
  }
}

/** Empties the event data builder and returns it. */
export function eventData(): EventData {
  dataLen = 0;
  dataOverflow = false;
  return changetype<EventData>(DATA_SCRATCH());
}
