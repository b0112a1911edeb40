// A plugin that exposes the SDK's helpers to tests/sdk.test.mjs. Built with
// the same flags as a real plugin (asconfig.plugin.json), plus more memory:
// the tests allocate strings and the stub runtime never frees.

import {
  BUFFER,
  JsonKind,
  LogInfo,
  StatusBadLength,
  StatusOK,
  config,
  emit,
  eventData,
  isDTMFKey,
  isKnownEvent,
  eventName,
  gainToDb,
  log,
  maxSamples,
  metadata,
  parseNumber,
  samples,
  sat16,
  vox_buffer,
  voxhost_abi_v1,
} from "../index";

export { voxhost_abi_v1, vox_buffer };

const KEY: usize = memory.data(256, 16);
const OUT: usize = memory.data(256, 16);

export function keyPtr(): usize {
  return KEY;
}
export function outPtr(): usize {
  return OUT;
}
export function bufferPtr(): usize {
  return BUFFER;
}

function key(keyLen: i32): string {
  return String.UTF8.decodeUnsafe(KEY, <usize>keyLen);
}

export function vox_init(config_len: i32): i32 {
  return StatusOK;
}

// Halves every sample, saturating a doubled copy first to exercise sat16.
export function vox_process(n: i32): i32 {
  if (n <= 0 || n > maxSamples()) return StatusBadLength;
  const s = samples();
  for (let i = 0; i < n; i++) s[i] = sat16(<i32>s[i] * 2) >> 1;
  return n;
}

export function t_number(len: i32, keyLen: i32, fallback: f64): f64 {
  return config(len).number(key(keyLen), fallback);
}
export function t_kind(len: i32, keyLen: i32): i32 {
  return <i32>config(len).kind(key(keyLen));
}
export function t_has(len: i32, keyLen: i32): bool {
  return config(len).has(key(keyLen));
}
export function t_bool(len: i32, keyLen: i32, fallback: bool): bool {
  return config(len).bool(key(keyLen), fallback);
}
export function t_stringInto(len: i32, keyLen: i32, cap: i32): i32 {
  return config(len).stringInto(key(keyLen), OUT, cap);
}
// Logs the decoded string so the test sees it as UTF-8; returns false for null.
export function t_string(len: i32, keyLen: i32): bool {
  const s = config(len).string(key(keyLen));
  if (s == null) return false;
  log(LogInfo, s);
  return true;
}
// Enters "params" of call metadata, then logs the string member key.
export function t_enterString(len: i32, keyLen: i32): i32 {
  const m = metadata(len);
  if (!m.enter("params")) return -1;
  const s = m.string(key(keyLen));
  if (s == null) return 0;
  log(LogInfo, s);
  return 1;
}
export function t_parseNumber(len: i32): f64 {
  return parseNumber(BUFFER, BUFFER + <usize>len);
}

export function t_log(which: i32): void {
  if (which == 0) log(LogInfo, "héllo €𝄞");
  else if (which == 1) log(2, "a\uD800b\uDC00");
  else if (which == 2) log(3, "é".repeat(3000)); // 6000 bytes: cut to 4096 at a character
}

export function t_emit(which: i32): void {
  if (which == 0) emit("dtmf", '"5"');
  else if (which == 1) emit("speech_start");
  else if (which == 2)
    eventData()
      .raw("[")
      .quoted('a"b\\c\n\u0001é𝄞')
      .raw(",")
      .int(-123)
      .raw(",")
      .int(0)
      .raw(",")
      .int(i64.MIN_VALUE)
      .raw(",")
      .int(i64.MAX_VALUE)
      .raw(",")
      .bool(true)
      .raw(",")
      .null()
      .raw(",")
      .quotedChar(0x23)
      .raw(",")
      .quotedChar(0x22)
      .raw("]")
      .emit("test.data");
  else if (which == 3) {
    const d = eventData().raw("[");
    for (let i = 0; i < 1000; i++) d.raw("1234,");
    d.raw("0]").emit("test.big");
  } else if (which == 4) emit("a".repeat(65), "1");
}

// fixed(v, d) or scaled(v, d), emitted as the data of "t".
export function t_fixed(v: f64, d: i32): void {
  eventData().fixed(v, d).emit("t");
}
export function t_scaled(v: i64, d: i32): void {
  eventData().scaled(v, d).emit("t");
}
export function t_gainToDb(g: f64): f64 {
  return gainToDb(g);
}
const ALLOWED: StaticArray<string> = ["rate_hz", "depth"];
// checkKeys against ALLOWED; the unknown key, if any, is logged.
export function t_checkKeys(len: i32): bool {
  return config(len).checkKeys("t", ALLOWED);
}
// The keys, joined by commas, logged.
export function t_keys(len: i32): void {
  log(LogInfo, config(len).keys().join(","));
}

export function t_eventName(kind: i32): void {
  log(LogInfo, eventName(kind));
}
export function t_isKnownEvent(kind: i32): bool {
  return isKnownEvent(kind);
}
export function t_isDTMFKey(arg: i32): bool {
  return isDTMFKey(arg);
}
export function t_kinds(): i32 {
  // Pins the numbering of JsonKind the tests use.
  return JsonKind.Absent | (JsonKind.Null << 4) | (JsonKind.Bool << 8) | (JsonKind.Number << 12) |
    (JsonKind.String << 16) | (JsonKind.Object << 20) | (JsonKind.Array << 24) | (JsonKind.Invalid << 28);
}
