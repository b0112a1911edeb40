;; tremolo — the example plugin of every voxhost SDK, by hand in WebAssembly
;; text (examples/TREMOLO.md). No compiler: every byte of the module is
;; written here, but for the SDK's JSON reader ($vox_find, $vox_number),
;; which sdk/wat/voxhost.wat brings where the last line includes it.
;;
;; Config: {"rate_hz": 4, "depth": 0.5} (the defaults; 0.1..20 Hz, 0..1).
;; Build:  make   (sdk/wat/wat.mk: the SDK spliced in, then wat2wasm)
;;
;; Memory map (one page, min = max, never grows):
;;      16  "tremolo.key"                        event name, 11 bytes
;;      32  {"digit":"?","enabled":true}         event data, 28 bytes; the digit at +10
;;      64  {"digit":"?","enabled":false}        event data, 29 bytes; the digit at +10
;;      96  "rate_hz", 104 "depth"               config keys
;;     128  log messages (3, each under 64 bytes)
;;     768  the SDK's (voxhost.wat) scratch space and strings
;;    1024  the frame buffer, to the end of the page: 64512 bytes
;; The state lives in globals, not in memory, so it cannot overlap the buffer.
(module
  (import "voxhost" "log" (func $log (param i32 i32 i32)))         ;; level ptr len
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))   ;; name len data len

  (memory (export "memory") 1 1)

  (data (i32.const 16) "tremolo.key")
  (data (i32.const 32) "{\"digit\":\"?\",\"enabled\":true}")
  (data (i32.const 64) "{\"digit\":\"?\",\"enabled\":false}")
  (data (i32.const 96) "rate_hz")
  (data (i32.const 104) "depth")
  (data (i32.const 128) "tremolo: \"rate_hz\" must be a number from 0.1 to 20")       ;; 50
  (data (i32.const 192) "tremolo: \"depth\" must be a number from 0 to 1")            ;; 45
  (data (i32.const 256) "tremolo: the input rate must lie between 8000 and 48000 Hz") ;; 58

  ;; Configuration, set by vox_init.
  (global $rate_hz (mut f64) (f64.const 4))
  (global $depth_q16 (mut i32) (i32.const 32768))  ;; floor(0.5 * 65536 + 0.5)
  ;; State of the call.
  (global $inc (mut i32) (i32.const 0))            ;; phase step per sample, set by vox_rate
  (global $phase (mut i32) (i32.const 0))          ;; LFO phase, an unsigned 32-bit value
  (global $enabled (mut i32) (i32.const 1))        ;; '#' toggles it

  ;; The ABI version marker: never called, its name is what counts.
  (func (export "voxhost_abi_v1"))

  ;; The buffer is the page after its first KiB. i32.gt_u also refuses a
  ;; negative capacity; 0 means "cannot provide".
  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $capacity) (i32.const 64512))
      (then (i32.const 0))
      (else (i32.const 1024))))

  ;; ---- The ABI exports ----------------------------------------------------

  ;; The config JSON is at 1024, $len bytes. An absent key keeps its default;
  ;; a value that is not a number reads as NaN and fails the range check.
  (func (export "vox_init") (param $len i32) (result i32)
    (local $at i32) (local $rate f64) (local $depth f64)
    (local.set $rate (f64.const 4))
    (local.set $depth (f64.const 0.5))
    (local.set $at (call $vox_find (i32.const 1024) (local.get $len) (i32.const 96) (i32.const 7)))
    (if (i32.ge_s (local.get $at) (i32.const 0))
      (then (local.set $rate (call $vox_number (local.get $at) (i32.add (i32.const 1024) (local.get $len))))))
    ;; not (0.1 <= rate <= 20): written so that NaN fails too.
    (if (i32.eqz (i32.and (f64.ge (local.get $rate) (f64.const 0.1))
                          (f64.le (local.get $rate) (f64.const 20))))
      (then (call $log (i32.const 3) (i32.const 128) (i32.const 50))              ;; 3 = error
            (return (i32.const -2))))                                               ;; StatusBadConfig
    (local.set $at (call $vox_find (i32.const 1024) (local.get $len) (i32.const 104) (i32.const 5)))
    (if (i32.ge_s (local.get $at) (i32.const 0))
      (then (local.set $depth (call $vox_number (local.get $at) (i32.add (i32.const 1024) (local.get $len))))))
    (if (i32.eqz (i32.and (f64.ge (local.get $depth) (f64.const 0))
                          (f64.le (local.get $depth) (f64.const 1))))
      (then (call $log (i32.const 3) (i32.const 192) (i32.const 45))
            (return (i32.const -2))))
    (global.set $rate_hz (local.get $rate))
    ;; depth_q16 = floor(depth * 65536 + 0.5); the operand is >= 0.5, so the
    ;; conversion cannot trap.
    (global.set $depth_q16 (i32.trunc_f64_s
      (f64.floor (f64.add (f64.mul (local.get $depth) (f64.const 65536)) (f64.const 0.5)))))
    (i32.const 0))                                                                  ;; StatusOK

  ;; Any rate from 8 to 48 kHz, returned unchanged, after computing
  ;; inc = floor(rate_hz * 2^32 / input_rate + 0.5) (at most 2^32 / 400).
  (func (export "vox_rate") (param $rate i32) (result i32)
    (if (i32.or (i32.lt_s (local.get $rate) (i32.const 8000))
                (i32.gt_s (local.get $rate) (i32.const 48000)))
      (then (call $log (i32.const 3) (i32.const 256) (i32.const 58))
            (return (i32.const -3))))                                               ;; StatusBadRate
    (global.set $inc (i32.wrap_i64 (i64.trunc_f64_u
      (f64.floor (f64.add
        (f64.div (f64.mul (global.get $rate_hz) (f64.const 4294967296))
                 (f64.convert_i32_s (local.get $rate)))
        (f64.const 0.5))))))
    (local.get $rate))

  ;; Per sample: p = phase >> 16; tri = triangle of p, 0..65534;
  ;; g = 65536 - (depth_q16 * tri >> 16); s = s * g >> 16; phase += inc.
  (func (export "vox_process") (param $n i32) (result i32)
    (local $s i32) (local $end i32) (local $ph i32) (local $x i32) (local $g i32)
    (local $inc i32) (local $depth i32)
    (if (i32.or (i32.le_s (local.get $n) (i32.const 0))
                (i32.gt_s (local.get $n) (i32.const 32256)))                      ;; 64512 / 2
      (then (return (i32.const -4))))                                               ;; StatusBadLength
    ;; Disabled: the samples stay as they are, and the phase still moves on
    ;; n steps (n additions of inc are one multiplication, modulo 2^32).
    (if (i32.eqz (global.get $enabled))
      (then (global.set $phase (i32.add (global.get $phase) (i32.mul (global.get $inc) (local.get $n))))
            (return (local.get $n))))
    ;; Globals live in memory once compiled; locals can stay in registers.
    (local.set $inc (global.get $inc))
    (local.set $depth (global.get $depth_q16))
    (local.set $ph (global.get $phase))
    (local.set $s (i32.const 1024))
    (local.set $end (i32.add (i32.const 1024) (i32.shl (local.get $n) (i32.const 1))))
    (loop $next
      (local.set $x (i32.shr_u (local.get $ph) (i32.const 16)))
      ;; depth_q16 <= 65536 and tri <= 65534: their product is below 2^32, so
      ;; an unsigned 32-bit multiply and shift give the 64-bit result exactly.
      (local.set $g (i32.sub (i32.const 65536)
        (i32.shr_u
          (i32.mul (local.get $depth)
                   (i32.shl (select (local.get $x) (i32.sub (i32.const 65535) (local.get $x))
                                    (i32.lt_u (local.get $x) (i32.const 32768)))
                            (i32.const 1)))
          (i32.const 16))))
      ;; |s * g| <= 32768 * 65536 = 2^31: fits i32; shr_s is the floor.
      (i32.store16 (local.get $s)
        (i32.shr_s (i32.mul (i32.load16_s (local.get $s)) (local.get $g)) (i32.const 16)))
      (local.set $ph (i32.add (local.get $ph) (local.get $inc)))
      (local.set $s (i32.add (local.get $s) (i32.const 2)))
      (br_if $next (i32.lt_u (local.get $s) (local.get $end))))
    (global.set $phase (local.get $ph))
    (local.get $n))

  ;; DTMF (kind 3): '#' toggles the effect, then every key is reported as
  ;; tremolo.key {"digit":"D","enabled":B}. Every other kind: nothing, 0.
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (local $data i32)
    (if (i32.ne (local.get $kind) (i32.const 3))
      (then (return (i32.const 0))))
    (if (i32.eq (local.get $arg) (i32.const 0x23))                                  ;; '#'
      (then (global.set $enabled (i32.eqz (global.get $enabled)))))
    (local.set $data (select (i32.const 32) (i32.const 64) (global.get $enabled)))
    (i32.store8 offset=10 (local.get $data) (local.get $arg))
    (call $emit (i32.const 16) (i32.const 11)
                (local.get $data) (select (i32.const 28) (i32.const 29) (global.get $enabled)))
    (i32.const 0))

  ;; @include voxhost.wat
)
