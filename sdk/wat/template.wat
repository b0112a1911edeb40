;; __NAME__: a voxhost plugin in WebAssembly text, made from sdk/wat/template.wat
;; by `voxhost plugin new --lang wat`.
;;
;; It changes the volume by gain_db decibels and reports every DTMF key as the
;; event __NAME__.key, with every export of the ABI (abi/ABI.md) present and
;; explained. Keep what you need and replace the processing. The SDK's
;; functions ($vox_find, $vox_number, $vox_check_keys, $vox_fmt_int,
;; $vox_db_to_gain, ...) come from voxhost/voxhost.wat, which the build puts
;; where the line ";; @include voxhost.wat" stands; its head lists them all.
;;
;; Config: {"gain_db": -6} (the default; -60 to 20). Any other key is refused.
;; Build: make   Check: make test   Hear: make run CONFIG="gain_db=-12"
;;
;; Types: every parameter and result of the ABI is an i32; a pointer is a
;; byte offset into this module's memory; negative results are status codes:
;;   -1 error   -2 bad config   -3 bad rate   -4 bad length   -5 bad state
(module
  ;; ---- Imports --------------------------------------------------------------
  ;; The only module a plugin may import from is "voxhost"; any other import
  ;; makes the plugin invalid. Both functions copy their arguments before they
  ;; return and never trap: a bad pointer or name is dropped and counted.
  ;; log(level, ptr, len): a UTF-8 line for the host log.
  ;;   level 0 debug, 1 info, 2 warn, 3 error; lines over 4096 bytes are cut.
  (import "voxhost" "log" (func $log (param i32 i32 i32)))
  ;; emit(name_ptr, name_len, data_ptr, data_len): an event for the call's
  ;;   client. name: 1-64 bytes of [a-z0-9_.-]; data: one JSON value of at
  ;;   most 4096 bytes, or nothing (data_len 0).
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))

  ;; ---- Memory (required) ----------------------------------------------------
  ;; Exactly one memory, defined here (not imported), exported as "memory".
  ;; min = max: it never grows, so the host's view of the buffer never moves.
  (memory (export "memory") 1 1)

  ;; Layout (address 0 is best left unused, so that 0 is never valid data):
  ;;      0 ..   767   yours: constant strings, scratch space
  ;;    768 ..  1023   voxhost.wat's scratch space and strings
  ;;   1024 .. 65535   the frame buffer (64512 bytes)
  ;; Strings end with a 0 byte where $vox_strlen measures them.
  (data (i32.const 16) "__NAME__\00")                     ;; the plugin's name, for log lines
  (data (i32.const 64) "__NAME__.key\00")                 ;; the event's name
  (data (i32.const 128) "gain_db\00")                     ;; the config's keys, each ended by a 0 byte
  (data (i32.const 144) "__NAME__: \"gain_db\" must be a number from -60 to 20\00")
  (data (i32.const 256) "{\"key\":\"")                    ;; 8 bytes
  (data (i32.const 272) "\",\"samples\":")                ;; 12 bytes
  ;; 320 .. 767: where the event's data is written

  ;; State in globals, not in the buffer: between calls the host may
  ;; overwrite every byte of it. The host makes one instance per call, so
  ;; globals are per call.
  (global $gain_q16 (mut i64) (i64.const 65536))          ;; the gain in Q16 (65536 = 1.0)
  (global $samples_seen (mut i64) (i64.const 0))          ;; samples processed so far

  ;; ---- The version marker (required) ----------------------------------------
  ;; Its name says "built for ABI v1". The host never calls it.
  (func (export "voxhost_abi_v1"))

  ;; ---- vox_buffer (required) -------------------------------------------------
  ;; (capacity_bytes) -> ptr. Where frames, the config and the call metadata
  ;; are exchanged: at least capacity_bytes, 2-byte aligned (16 is better),
  ;; inside memory; 0 means "cannot provide that much" (i32.gt_u also
  ;; refuses a negative capacity). The reference host asks for 1600 bytes.
  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $capacity) (i32.const 64512))
      (then (i32.const 0))
      (else (i32.const 1024))))

  ;; ---- vox_init (optional) ---------------------------------------------------
  ;; (config_len) -> status. Called once, after the first vox_buffer: the
  ;; config is a JSON object of config_len bytes at the buffer ({} when none).
  ;; Copy what you keep. Return 0, or -2 to reject it after logging why.
  ;; Without vox_init the host refuses any config but {}.
  (func (export "vox_init") (param $len i32) (result i32)
    (local $at i32) (local $db f64)
    ;; A typo'd key is an error, not silently the default.
    (if (call $vox_check_keys (i32.const 1024) (local.get $len) (i32.const 128) (i32.const 8) (i32.const 16))
      (then (return (i32.const -2))))
    (local.set $db (f64.const -6))
    (local.set $at (call $vox_find (i32.const 1024) (local.get $len) (i32.const 128) (i32.const 7)))
    (if (i32.ge_s (local.get $at) (i32.const 0))
      (then (local.set $db (call $vox_number (local.get $at) (i32.add (i32.const 1024) (local.get $len))))))
    ;; not (-60 <= db <= 20): written so that NaN (not a number) fails too.
    (if (i32.eqz (i32.and (f64.ge (local.get $db) (f64.const -60)) (f64.le (local.get $db) (f64.const 20))))
      (then (call $vox_log_str (i32.const 3) (i32.const 144))
            (return (i32.const -2))))
    (global.set $gain_q16 (i64.trunc_f64_s (f64.floor (f64.add
      (f64.mul (call $vox_db_to_gain (local.get $db)) (f64.const 65536)) (f64.const 0.5)))))
    (i32.const 0))

  ;; ---- vox_rate (optional) ---------------------------------------------------
  ;; (input_rate) -> output_rate. Called once, after vox_init: return the rate
  ;; you produce (a resampler returns another), or -3 for an input rate you
  ;; cannot take. Without vox_rate: output = input, every rate accepted,
  ;; which is what this one does.
  (func (export "vox_rate") (param $input_rate i32) (result i32)
    (local.get $input_rate))

  ;; ---- vox_process (required) ------------------------------------------------
  ;; (samples) -> count. samples (>= 1) PCM16 samples are at the buffer,
  ;; 2 bytes apart: i32.load16_s reads one, i32.store16 writes one. Work in
  ;; place; return how many samples flow on (0 swallows the frame), or -4 for
  ;; a length you cannot handle.
  (func (export "vox_process") (param $n i32) (result i32)
    (local $p i32) (local $end i32) (local $g i64) (local $y i64)
    (if (i32.or (i32.le_s (local.get $n) (i32.const 0)) (i32.gt_s (local.get $n) (i32.const 32256)))
      (then (return (i32.const -4))))
    (local.set $g (global.get $gain_q16))                 ;; a local can stay in a register
    (local.set $p (i32.const 1024))
    (local.set $end (i32.add (i32.const 1024) (i32.shl (local.get $n) (i32.const 1))))
    (loop $next
      ;; s * gain, rounded to the nearest sample and saturated to 16 bits
      (local.set $y (i64.shr_s (i64.add (i64.mul (i64.extend_i32_s (i32.load16_s (local.get $p))) (local.get $g))
                                        (i64.const 32768))
                               (i64.const 16)))
      (if (i64.gt_s (local.get $y) (i64.const 32767)) (then (local.set $y (i64.const 32767))))
      (if (i64.lt_s (local.get $y) (i64.const -32768)) (then (local.set $y (i64.const -32768))))
      (i32.store16 (local.get $p) (i32.wrap_i64 (local.get $y)))
      (local.set $p (i32.add (local.get $p) (i32.const 2)))
      (br_if $next (i32.lt_u (local.get $p) (local.get $end))))
    (global.set $samples_seen (i64.add (global.get $samples_seen) (i64.extend_i32_u (local.get $n))))
    (local.get $n))

  ;; ---- vox_event (optional) --------------------------------------------------
  ;; (kind, arg) -> result. Kinds:
  ;;   1 call_start  arg = length of the call metadata JSON at the buffer
  ;;   2 call_end    no further calls follow
  ;;   3 dtmf        arg = ASCII code of the key: 0-9 * # A-D
  ;;   4 clear       barge-in: drop any audio you hold (this plugin holds none)
  ;;   5 flush       the input ended: write held samples at the buffer and
  ;;                 return their count (>= 0); they flow on like a frame
  ;; Success is 0 (or the flush count). Kinds you do not know must return 0.
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (local $p i32)
    (if (i32.eq (local.get $kind) (i32.const 3))
      (then
        ;; The event {"key":"5","samples":1200}, written at 320.
        (local.set $p (call $vox_copy (i32.const 320) (i32.const 256) (i32.const 8)))
        (i32.store8 (local.get $p) (local.get $arg))                    ;; a key needs no escaping
        (local.set $p (call $vox_copy (i32.add (local.get $p) (i32.const 1)) (i32.const 272) (i32.const 12)))
        (local.set $p (call $vox_fmt_int (local.get $p) (global.get $samples_seen)))
        (i32.store8 (local.get $p) (i32.const 0x7d))                    ;; '}'
        (call $emit (i32.const 64) (call $vox_strlen (i32.const 64))
                    (i32.const 320) (i32.sub (i32.add (local.get $p) (i32.const 1)) (i32.const 320)))))
    (i32.const 0))

  ;; ---- _initialize (optional, not used here) -----------------------------------
  ;; If exported, the host calls it once right after instantiation, before
  ;; vox_buffer. Globals and data segments need none. Never name it _start.
  ;;   (func (export "_initialize"))

  ;; @include voxhost.wat
)
