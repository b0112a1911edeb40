// Tests of the SDK's helpers through tests/build/fixture.wasm (npm test builds
// it first). Run: cd sdk/assemblyscript && npm ci && npm test
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const wasm = new WebAssembly.Module(readFileSync(new URL("build/fixture.wasm", import.meta.url)));
const utf8 = new TextDecoder("utf-8", { fatal: true });
const enc = new TextEncoder();

function instance() {
  const calls = [];
  let mem;
  const bytes = (p, n) => new Uint8Array(mem.buffer, p, n).slice();
  const imports = {
    voxhost: {
      log: (level, ptr, len) => calls.push({ fn: "log", level, text: utf8.decode(bytes(ptr, len)), len }),
      emit: (np, nl, dp, dl) =>
        calls.push({
          fn: "emit",
          nameLen: nl,
          dataLen: dl,
          name: nl <= 64 ? utf8.decode(bytes(np, nl)) : null,
          data: dl <= 4096 ? utf8.decode(bytes(dp, dl)) : null,
        }),
    },
  };
  const inst = new WebAssembly.Instance(wasm, imports);
  const x = inst.exports;
  mem = x.memory;
  const buf = x.vox_buffer(16384);
  const put = (addr, s) => {
    const b = enc.encode(s);
    new Uint8Array(mem.buffer, addr, b.length).set(b);
    return b.length;
  };
  const json = (text) => put(buf, text);
  const key = (k) => put(x.keyPtr(), k);
  return { x, mem, buf, calls, json, key, put };
}

test("exports and imports are the ABI's", () => {
  const names = WebAssembly.Module.exports(wasm).map((e) => `${e.name}:${e.kind}`);
  for (const want of ["memory:memory", "voxhost_abi_v1:function", "vox_buffer:function", "vox_process:function", "vox_init:function"]) {
    assert.ok(names.includes(want), `missing export ${want}`);
  }
  const imports = WebAssembly.Module.imports(wasm).map((i) => `${i.module}.${i.name}`).sort();
  assert.deepEqual(imports, ["voxhost.emit", "voxhost.log"]);
});

test("vox_buffer", () => {
  const { x } = instance();
  const p = x.vox_buffer(1600);
  assert.ok(p > 0 && p % 16 === 0);
  assert.equal(x.vox_buffer(16384), p);
  assert.equal(x.vox_buffer(16385), 0);
  assert.equal(x.vox_buffer(-1), 0);
  assert.equal(x.bufferPtr(), p);
});

test("samples view and sat16", () => {
  const { x, mem, buf } = instance();
  x.vox_buffer(320);
  const s = new Int16Array(mem.buffer, buf, 160);
  const input = [-32768, 32767, -1, 1, 0, 20000, -20000, 12345];
  s.set(input);
  assert.equal(x.vox_process(input.length), input.length);
  // sat16(2v) >> 1: saturation at ±16384 before halving.
  assert.deepEqual(Array.from(s.subarray(0, input.length)), [-16384, 16383, -1, 1, 0, 16383, -16384, 12345]);
  assert.equal(x.vox_process(0), -4);
  assert.equal(x.vox_process(161), -4);
});

const numbers = [
  "0", "-0", "5", "20", "0.1", "0.8", "0.5", "4", "0.33", "13.337", "0.999", "1e2", "1E2", "1e+2",
  "-0.5", "123.456e-7", "0.30000000000000004", "2.2250738585072014e-308", "1.7976931348623157e308",
  "9007199254740993", "123456789012345678901234567890", "1e23", "5e-324", "0.000001", "3.141592653589793",
  "100000000000000000000000", "1e-400", "1e400",
];

test("numbers parse as JSON numbers", () => {
  const { x, json } = instance();
  for (const n of numbers) {
    const got = x.t_parseNumber(json(n));
    const want = Number(n);
    if (Object.is(got, want)) continue;
    // Beyond 2^53 or 10^±22 the SDK is within a few ulps, not exact.
    assert.ok(Math.abs(got - want) <= Math.abs(want) * 4e-16, `${n}: got ${got}, want ${want}`);
  }
  for (const bad of ["", "-", "+1", "01", "1.", ".5", "1e", "1e+", "0x10", "NaN", "Infinity", "1 ", "--1", "1.2.3"]) {
    assert.ok(Number.isNaN(x.t_parseNumber(json(bad))), `${JSON.stringify(bad)} should not parse`);
  }
});

test("numbers with up to 15 digits and small exponents are correctly rounded", () => {
  const { x, json } = instance();
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let i = 0; i < 20000; i++) {
    const digits = 1 + Math.floor(rand() * 15);
    let m = "";
    for (let d = 0; d < digits; d++) m += Math.floor(rand() * 10);
    m = m.replace(/^0+(?=\d)/, "");
    const dot = Math.floor(rand() * (m.length + 1));
    let s = dot < m.length ? `${m.slice(0, dot) || "0"}.${m.slice(dot)}` : m;
    if (rand() < 0.3) s += `e${Math.floor(rand() * 15) - 7}`;
    if (rand() < 0.5) s = "-" + s;
    assert.ok(Object.is(x.t_parseNumber(json(s)), Number(s)), s);
  }
});

test("config lookup by key", () => {
  const { x, json, key } = instance();
  const cfg = json('{ "a" : 1.5, "s":"x\\"y", "t":true, "f":false, "n":null, "o":{"rate_hz":9,"s":"}"}, "arr":[1,"]",{}], "rate_hz": 7 , "e":"", "bad": tru, "dup":1, "dup":2}');
  const kind = (k) => x.t_kind(cfg, key(k));
  const num = (k, fb = NaN) => x.t_number(cfg, key(k), fb);
  assert.equal(x.t_kinds(), 0x76543210);
  assert.equal(kind("a"), 3);
  assert.equal(kind("s"), 4);
  assert.equal(kind("t"), 2);
  assert.equal(kind("f"), 2);
  assert.equal(kind("n"), 1);
  assert.equal(kind("o"), 5);
  assert.equal(kind("arr"), 6);
  assert.equal(kind("e"), 4);
  assert.equal(kind("bad"), 7);
  assert.equal(kind("missing"), 0);
  assert.equal(kind("A"), 0);
  assert.equal(num("a"), 1.5);
  assert.equal(num("rate_hz"), 7); // the top-level one, not o.rate_hz
  assert.equal(num("dup"), 1);
  assert.equal(num("missing", 4), 4);
  assert.ok(Number.isNaN(num("s", 4)));
  assert.ok(Number.isNaN(num("t", 4)));
  assert.ok(Number.isNaN(num("n", 4)));
  assert.equal(x.t_has(cfg, key("n")), 1);
  assert.equal(x.t_has(cfg, key("zz")), 0);
  assert.equal(x.t_bool(cfg, key("t"), 0), 1);
  assert.equal(x.t_bool(cfg, key("f"), 1), 0);
  assert.equal(x.t_bool(cfg, key("a"), 1), 1);
  assert.equal(x.t_bool(cfg, key("missing"), 0), 0);
  // Keys inside string values are not keys.
  const tricky = json('{"x":"\\"rate_hz\\":5","rate_hz":6}');
  assert.equal(x.t_number(tricky, key("rate_hz"), NaN), 6);
  for (const text of ["{}", "", "[]", '{"rate_hz"', '{"rate_hz":', "  {  }  ", "5"]) {
    assert.equal(x.t_kind(json(text), key("rate_hz")), 0, text);
  }
});

test("config strings", () => {
  const { x, mem, json, key, calls } = instance();
  const cfg = json('{"s":"a\\"b\\\\c\\/\\n\\t\\u00e9\\u20AC\\ud834\\udd1e\\ud800x","u":"héllo 𝄞","n":5}');
  const n = x.t_stringInto(cfg, key("u"), 64);
  assert.equal(utf8.decode(new Uint8Array(mem.buffer, x.outPtr(), n)), "héllo 𝄞");
  assert.equal(x.t_stringInto(cfg, key("u"), n - 1), -1);
  assert.equal(x.t_stringInto(cfg, key("n"), 64), -1);
  assert.equal(x.t_stringInto(cfg, key("zz"), 64), -1);
  assert.equal(x.t_string(cfg, key("s")), 1);
  assert.equal(calls.at(-1).text, 'a"b\\c/\n\té€𝄞\ufffdx');
  assert.equal(x.t_string(cfg, key("u")), 1);
  assert.equal(calls.at(-1).text, "héllo 𝄞");
  assert.equal(x.t_string(cfg, key("n")), 0);
  const meta = json('{"call_id":"CA1","pipeline":"agent","protocol":"twilio","sample_rate":8000,"stage":0,"params":{"lang":"en","x":"y"}}');
  assert.equal(x.t_enterString(meta, key("lang")), 1);
  assert.equal(calls.at(-1).text, "en");
  assert.equal(x.t_enterString(meta, key("call_id")), 0);
  assert.equal(x.t_enterString(json('{"params":"no"}'), key("lang")), -1);
});

test("log encodes UTF-8 and cuts at 4096 bytes", () => {
  const { x, calls } = instance();
  x.t_log(0);
  assert.deepEqual(calls.at(-1), { fn: "log", level: 1, text: "héllo €𝄞", len: 14 });
  x.t_log(1);
  assert.equal(calls.at(-1).text, "a\ufffdb\ufffd");
  assert.equal(calls.at(-1).level, 2);
  x.t_log(2);
  assert.equal(calls.at(-1).len, 4096);
  assert.equal(calls.at(-1).text, "é".repeat(2048));
});

test("emit and event data", () => {
  const { x, calls } = instance();
  x.t_emit(0);
  assert.deepEqual(calls.at(-1), { fn: "emit", nameLen: 4, dataLen: 3, name: "dtmf", data: '"5"' });
  x.t_emit(1);
  assert.deepEqual(calls.at(-1), { fn: "emit", nameLen: 12, dataLen: 0, name: "speech_start", data: "" });
  x.t_emit(2);
  const e = calls.at(-1);
  assert.equal(e.name, "test.data");
  assert.deepEqual(JSON.parse(e.data), ['a"b\\c\n\u0001é𝄞', -123, 0, -9223372036854775808, 9223372036854775807, true, null, "#", '"']);
  assert.ok(e.data.includes("-9223372036854775808,9223372036854775807"));
  x.t_emit(3); // 5002 bytes: passed with a length the host refuses
  assert.equal(calls.at(-1).dataLen, 4097);
  x.t_emit(4); // a 65-byte name
  assert.equal(calls.at(-1).nameLen, 65);
});

test("fixed and scaled decimals: every SDK's text", () => {
  const { x, calls } = instance();
  const fixed = (v, d) => (x.t_fixed(v, d), calls.at(-1).data);
  const scaled = (v, d) => (x.t_scaled(v, d), calls.at(-1).data);
  // The cases of sdk/go's and sdk/rust's own tests.
  for (const [v, d, want] of [[-1234n, 2, "-12.34"], [5n, 3, "0.005"], [-5n, 2, "-0.05"], [0n, 2, "0.00"], [42n, 0, "42"],
    [-9223372036854775808n, 0, "-9223372036854775808"], [9223372036854775807n, 18, "9.223372036854775807"]]) {
    assert.equal(scaled(v, d), want, `scaled(${v}, ${d})`);
  }
  for (const [v, d, want] of [[-3.14159, 2, "-3.14"], [2.5, 0, "3"], [-2.5, 0, "-3"], [0.125, 2, "0.13"], [-0.004, 2, "0.00"],
    [-0, 1, "0.0"], [1.005, 2, "1.00"], [123456.789, 9, "123456.789000000"], [NaN, 2, "null"], [-Infinity, 2, "null"],
    [1e18, 0, "null"], [-6.0206, 2, "-6.02"]]) {
    assert.equal(fixed(v, d), want, `fixed(${v}, ${d})`);
  }
});

test("gainToDb", () => {
  const { x } = instance();
  assert.ok(Math.abs(x.t_gainToDb(0.5) + 6.020599913279624) < 1e-12);
  assert.equal(x.t_gainToDb(1), 0);
  assert.equal(x.t_gainToDb(0), -Infinity);
});

test("config keys: listed, and an unknown one refused", () => {
  const { x, calls, json } = instance();
  let n = json(' { "rate_hz" : 5, "nested": {"depth": 1}, "s": "depth", "depth": 0.5 } ');
  x.t_keys(n);
  assert.equal(calls.at(-1).text, "rate_hz,nested,s,depth");
  assert.equal(x.t_checkKeys(n), 0); // false
  assert.deepEqual(calls.at(-1), { fn: "log", level: 3, text: 't: unknown config key "nested"', len: 30 });
  n = json('{"depth":0.5,"rate_hz":4}');
  const before = calls.length;
  assert.equal(x.t_checkKeys(n), 1); // true
  assert.equal(calls.length, before, "nothing logged");
  assert.equal(x.t_checkKeys(json("{}")), 1);
});

test("event helpers", () => {
  const { x, calls } = instance();
  const names = [0, 1, 2, 3, 4, 5, 6].map((k) => (x.t_eventName(k), calls.at(-1).text));
  assert.deepEqual(names, ["unknown", "call_start", "call_end", "dtmf", "clear", "flush", "unknown"]);
  assert.deepEqual([0, 1, 5, 6].map((k) => x.t_isKnownEvent(k)), [0, 1, 1, 0]);
  const keys = [];
  for (let c = 0; c < 128; c++) if (x.t_isDTMFKey(c)) keys.push(String.fromCharCode(c));
  assert.equal(keys.join(""), "#*0123456789ABCD");
});
