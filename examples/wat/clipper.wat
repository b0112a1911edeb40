;; clipper — the "every SDK feature" example (examples/CLIPPER.md), by hand in
;; WebAssembly text on the WAT SDK (sdk/wat/voxhost.wat, included at the end):
;; a peak limiter with a 16-sample lookahead, a config with a number, a string
;; and a boolean and no unknown keys, dB both ways, an event with integers and
;; a fixed-point decimal, a DTMF reset, held audio that clear drops and flush
;; releases.
;;
;; Config: {"threshold_db": -6, "mode": "hard", "report": true} (the defaults).
;; Build:  make   (sdk/wat/wat.mk: the SDK spliced in, then wat2wasm)
;;
;; Memory map (one page, min = max, never grows):
;;      16  "clipper", 32 "clipper.stats"       names, each ended by a 0 byte
;;      48  the config keys, each ended by a 0 byte (25 bytes)
;;      80  "hard", 84 "soft"
;;      96  log messages, 48 bytes apart
;;     288  pieces of the event's JSON
;;     336  the delay line: 16 samples
;;     384  the event's data, as it is written
;;     768  the SDK's scratch space and strings
;;    1024  the frame buffer, to the end of the page: 64512 bytes
(module
  (import "voxhost" "log" (func $log (param i32 i32 i32)))
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))

  (memory (export "memory") 1 1)

  (data (i32.const 16) "clipper\00")
  (data (i32.const 32) "clipper.stats\00")
  (data (i32.const 48) "threshold_db\00mode\00report\00")      ;; "mode" at 61, "report" at 66
  (data (i32.const 80) "hardsoft")
  (data (i32.const 96) "clipper: \"threshold_db\" must be a number\00")
  (data (i32.const 144) "clipper: \"threshold_db\" must be from -60 to 0\00")
  (data (i32.const 192) "clipper: \"mode\" must be \"hard\" or \"soft\"\00")
  (data (i32.const 240) "clipper: \"report\" must be true or false\00")
  (data (i32.const 288) "{\"key\":")                          ;; 7 bytes
  (data (i32.const 296) ",\"clipped\":")                      ;; 11
  (data (i32.const 312) ",\"peak\":")                         ;; 8
  (data (i32.const 320) ",\"peak_dbfs\":")                    ;; 13

  ;; Configuration, set by vox_init.
  (global $threshold (mut i32) (i32.const 16422))            ;; floor(32767 * 10^(-6/20) + 0.5)
  (global $soft (mut i32) (i32.const 0))
  (global $report (mut i32) (i32.const 1))
  ;; State of the call.
  (global $clipped (mut i64) (i64.const 0))
  (global $peak (mut i32) (i32.const 0))
  (global $pos (mut i32) (i32.const 0))                      ;; in the delay line at 336
  (global $held (mut i32) (i32.const 0))

  (func (export "voxhost_abi_v1"))

  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $capacity) (i32.const 64512))
      (then (i32.const 0))
      (else (i32.const 1024))))

  ;; Logs the message at $msg at error level; returns -2 (StatusBadConfig).
  (func $refuse (param $msg i32) (result i32)
    (call $vox_log_str (i32.const 3) (local.get $msg))
    (i32.const -2))

  (func (export "vox_init") (param $len i32) (result i32)
    (local $end i32) (local $at i32) (local $db f64) (local $b i32)
    (local.set $end (i32.add (i32.const 1024) (local.get $len)))
    (if (call $vox_check_keys (i32.const 1024) (local.get $len) (i32.const 48) (i32.const 25) (i32.const 16))
      (then (return (i32.const -2))))
    (local.set $db (f64.const -6))
    (local.set $at (call $vox_find (i32.const 1024) (local.get $len) (i32.const 48) (i32.const 12)))
    (if (i32.ge_s (local.get $at) (i32.const 0))
      (then (local.set $db (call $vox_number (local.get $at) (local.get $end)))
            (if (f64.ne (local.get $db) (local.get $db))                               ;; NaN: not a number
              (then (return (call $refuse (i32.const 96)))))))
    (if (i32.eqz (i32.and (f64.ge (local.get $db) (f64.const -60)) (f64.le (local.get $db) (f64.const 0))))
      (then (return (call $refuse (i32.const 144)))))
    (local.set $at (call $vox_find (i32.const 1024) (local.get $len) (i32.const 61) (i32.const 4)))
    (if (i32.ge_s (local.get $at) (i32.const 0))
      (then
        (if (call $vox_string_is (local.get $at) (local.get $end) (i32.const 80) (i32.const 4))
          (then (global.set $soft (i32.const 0)))
          (else
            (if (call $vox_string_is (local.get $at) (local.get $end) (i32.const 84) (i32.const 4))
              (then (global.set $soft (i32.const 1)))
              (else (return (call $refuse (i32.const 192)))))))))
    (local.set $at (call $vox_find (i32.const 1024) (local.get $len) (i32.const 66) (i32.const 6)))
    (if (i32.ge_s (local.get $at) (i32.const 0))
      (then
        (local.set $b (call $vox_bool (local.get $at) (local.get $end)))
        (if (i32.lt_s (local.get $b) (i32.const 0))
          (then (return (call $refuse (i32.const 240)))))
        (global.set $report (local.get $b))))
    ;; threshold = floor(32767 * 10^(db/20) + 0.5), from 33 to 32767: no trap.
    (global.set $threshold (i32.trunc_f64_s (f64.floor (f64.add
      (f64.mul (f64.const 32767) (call $vox_db_to_gain (local.get $db))) (f64.const 0.5)))))
    (i32.const 0))

  ;; Per sample: a = |s|; peak = max(peak, a); above the threshold, clip (or
  ;; compress 4:1) and count; then through the 16-sample delay line.
  (func (export "vox_process") (param $n i32) (result i32)
    (local $p i32) (local $end i32) (local $v i32) (local $a i32) (local $x i32)
    (local $t i32) (local $peak i32) (local $pos i32) (local $clipped i64) (local $slot i32)
    (if (i32.or (i32.le_s (local.get $n) (i32.const 0)) (i32.gt_s (local.get $n) (i32.const 32256)))
      (then (return (i32.const -4))))
    (local.set $t (global.get $threshold))
    (local.set $peak (global.get $peak))
    (local.set $pos (global.get $pos))
    (local.set $clipped (global.get $clipped))
    (local.set $p (i32.const 1024))
    (local.set $end (i32.add (i32.const 1024) (i32.shl (local.get $n) (i32.const 1))))
    (loop $next
      (local.set $v (i32.load16_s (local.get $p)))
      (local.set $x (local.get $v))
      (local.set $a (select (i32.sub (i32.const 0) (local.get $v)) (local.get $v) (i32.lt_s (local.get $v) (i32.const 0))))
      (if (i32.gt_s (local.get $a) (local.get $peak)) (then (local.set $peak (local.get $a))))
      (if (i32.gt_s (local.get $a) (local.get $t))
        (then
          (local.set $clipped (i64.add (local.get $clipped) (i64.const 1)))
          (local.set $a (select
            (i32.add (local.get $t) (i32.shr_s (i32.sub (local.get $a) (local.get $t)) (i32.const 2)))
            (local.get $t)
            (global.get $soft)))
          (local.set $x (select (i32.sub (i32.const 0) (local.get $a)) (local.get $a) (i32.lt_s (local.get $v) (i32.const 0))))))
      (local.set $slot (i32.add (i32.const 336) (i32.shl (local.get $pos) (i32.const 1))))
      (i32.store16 (local.get $p) (i32.load16_s (local.get $slot)))
      (i32.store16 (local.get $slot) (local.get $x))
      (local.set $pos (i32.and (i32.add (local.get $pos) (i32.const 1)) (i32.const 15)))
      (local.set $p (i32.add (local.get $p) (i32.const 2)))
      (br_if $next (i32.lt_u (local.get $p) (local.get $end))))
    (global.set $peak (local.get $peak))
    (global.set $pos (local.get $pos))
    (global.set $clipped (local.get $clipped))
    (global.set $held (select (i32.const 16) (i32.add (global.get $held) (local.get $n))
                              (i32.gt_u (i32.add (global.get $held) (local.get $n)) (i32.const 16))))
    (local.get $n))

  ;; clipper.stats {"key":"5","clipped":12,"peak":32768,"peak_dbfs":0.00};
  ;; a key below 0 is null. Keys need no escaping.
  (func $stats (param $key i32)
    (local $p i32)
    (local.set $p (call $vox_copy (i32.const 384) (i32.const 288) (i32.const 7)))
    (if (i32.ge_s (local.get $key) (i32.const 0))
      (then (i32.store8 (local.get $p) (i32.const 0x22))
            (i32.store8 offset=1 (local.get $p) (local.get $key))
            (i32.store8 offset=2 (local.get $p) (i32.const 0x22))
            (local.set $p (i32.add (local.get $p) (i32.const 3))))
      (else (i32.store (local.get $p) (i32.const 0x6c6c756e))                          ;; "null"
            (local.set $p (i32.add (local.get $p) (i32.const 4)))))
    (local.set $p (call $vox_fmt_int (call $vox_copy (local.get $p) (i32.const 296) (i32.const 11)) (global.get $clipped)))
    (local.set $p (call $vox_fmt_int (call $vox_copy (local.get $p) (i32.const 312) (i32.const 8))
                                     (i64.extend_i32_s (global.get $peak))))
    (local.set $p (call $vox_fmt_fixed (call $vox_copy (local.get $p) (i32.const 320) (i32.const 13))
      (call $vox_gain_to_db (f64.div (f64.convert_i32_s (global.get $peak)) (f64.const 32767)))
      (i32.const 2)))
    (i32.store8 (local.get $p) (i32.const 0x7d))                                         ;; '}'
    (call $emit (i32.const 32) (i32.const 13) (i32.const 384) (i32.sub (i32.add (local.get $p) (i32.const 1)) (i32.const 384))))

  ;; Drops the held audio: the delay line all zeros.
  (func $drop_held
    (memory.fill (i32.const 336) (i32.const 0) (i32.const 32))
    (global.set $pos (i32.const 0))
    (global.set $held (i32.const 0)))

  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (local $n i32) (local $i i32)
    (if (i32.eq (local.get $kind) (i32.const 3))                                         ;; DTMF
      (then
        (if (global.get $report) (then (call $stats (local.get $arg))))
        (if (i32.eq (local.get $arg) (i32.const 0x2a))                                   ;; '*': reset
          (then (global.set $clipped (i64.const 0))
                (global.set $peak (i32.const 0))))
        (return (i32.const 0))))
    (if (i32.eq (local.get $kind) (i32.const 4))                                         ;; clear
      (then (call $drop_held)
            (return (i32.const 0))))
    (if (i32.eq (local.get $kind) (i32.const 5))                                         ;; flush
      (then
        (local.set $n (global.get $held))
        (block $done
          (loop $copy
            (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
            (i32.store16 (i32.add (i32.const 1024) (i32.shl (local.get $i) (i32.const 1)))
              (i32.load16_s (i32.add (i32.const 336) (i32.shl
                (i32.and (i32.add (i32.sub (i32.add (global.get $pos) (i32.const 16)) (local.get $n)) (local.get $i))
                         (i32.const 15))
                (i32.const 1)))))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $copy)))
        (if (global.get $report) (then (call $stats (i32.const -1))))
        (call $drop_held)
        (return (local.get $n))))
    (i32.const 0))

  ;; @include voxhost.wat
)
