;; template.wat — the voxhost plugin ABI v1 in its smallest complete form.
;;
;; A valid plugin that does nothing: every frame leaves as it came. Every
;; export of the ABI is here, the optional ones stubbed with what a real
;; plugin would put there, so a new plugin starts by copying this file and
;; filling in the blanks. The normative text is abi/ABI.md.
;;
;; Build:   wat2wasm template.wat -o template.wasm
;; Check:   go run ./cmd/voxhost plugin inspect template.wasm
;; Run:     go run ./cmd/voxhost run --pipeline "template.wasm" in.wav out.wav
;;
;; Types: every parameter and result of the ABI is an i32; a pointer is a
;; byte offset into this module's memory; negative results are status codes:
;;   -1 error   -2 bad config   -3 bad rate   -4 bad length   -5 bad state
(module
  ;; ---- Imports (optional) -------------------------------------------------
  ;; The only module a plugin may import from is "voxhost"; any other import
  ;; makes the plugin invalid. Both functions copy their arguments before they
  ;; return and never trap: a bad pointer or name is dropped and counted.
  ;;
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
  ;; One page is 64 KiB; the host refuses a minimum above its limit (256 pages).
  (memory (export "memory") 1 1)

  ;; Layout of this template:
  ;;      0 ..   1023   yours: constant strings, scratch space (address 0 is best left unused)
  ;;   1024 .. 65535   the frame buffer (64512 bytes)
  ;; Keep state in globals or outside the buffer: between calls the host may
  ;; overwrite every byte of the buffer.
  (data (i32.const 16) "template: ready")                 ;; 15 bytes, for the log line below

  ;; ---- The version marker (required) ----------------------------------------
  ;; Its name says "built for ABI v1". The host never calls it; its type must
  ;; be () -> ().
  (func (export "voxhost_abi_v1"))

  ;; ---- vox_buffer (required) -------------------------------------------------
  ;; (capacity_bytes) -> ptr. Returns where frames, the config and the call
  ;; metadata are exchanged: at least capacity_bytes, 2-byte aligned (16 is
  ;; better), inside memory. 0 (or less) means "cannot provide that much".
  ;; Called first, and maybe again between calls with a larger capacity;
  ;; the reference host asks for 1600 bytes (100 ms at 8 kHz).
  ;; i32.gt_u also refuses a negative capacity.
  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $capacity) (i32.const 64512))
      (then (i32.const 0))
      (else (i32.const 1024))))

  ;; ---- vox_init (optional) ---------------------------------------------------
  ;; (config_len) -> status. Called once, after the first vox_buffer: the
  ;; config is a JSON object of config_len bytes at the buffer ({} when none;
  ;; no NUL). Parse it and copy what you keep; the host overwrites the buffer
  ;; afterwards. Return 0, or -2 to reject the config (log why at level 3).
  ;; Without vox_init the host refuses any config but {}.
  ;; A number parser for flat JSON: $find and $number in examples/wat/tremolo.wat.
  (func (export "vox_init") (param $config_len i32) (result i32)
    (call $log (i32.const 0) (i32.const 16) (i32.const 15))   ;; 0 = debug: hidden by default
    (i32.const 0))                                            ;; StatusOK

  ;; ---- vox_rate (optional) ---------------------------------------------------
  ;; (input_rate) -> output_rate. Called once, after vox_init. input_rate is
  ;; in Hz: 8000 for the first stage, the previous stage's output rate after
  ;; it. Return the rate you produce (a resampler returns another rate), or -3
  ;; for an input rate you cannot take. Without vox_rate: output = input,
  ;; every rate accepted. This stub is what the absence of vox_rate means.
  (func (export "vox_rate") (param $input_rate i32) (result i32)
    (local.get $input_rate))

  ;; ---- vox_process (required) ------------------------------------------------
  ;; (samples) -> count. samples (>= 1) mono PCM16 samples, little-endian, are
  ;; at the buffer: i32.load16_s reads one, i32.store16 writes one, 2 bytes
  ;; apart. Work in place; return how many samples now at the buffer flow on:
  ;; > 0 that many (at most capacity / 2), 0 to swallow the frame, < 0 a
  ;; status (-4 for a length you cannot handle). Frames are usually 20 ms
  ;; (160 samples at 8 kHz) but may be any multiple of 1 ms.
  ;; The loop below would touch every sample; a passthrough needs none of it:
  ;;   (local $p i32) (local $end i32)
  ;;   (local.set $p (i32.const 1024))
  ;;   (local.set $end (i32.add (i32.const 1024) (i32.shl (local.get $samples) (i32.const 1))))
  ;;   (loop $next
  ;;     (i32.store16 (local.get $p) (i32.load16_s (local.get $p)))   ;; your sample here
  ;;     (local.set $p (i32.add (local.get $p) (i32.const 2)))
  ;;     (br_if $next (i32.lt_u (local.get $p) (local.get $end))))
  (func (export "vox_process") (param $samples i32) (result i32)
    (local.get $samples))

  ;; ---- vox_event (optional) --------------------------------------------------
  ;; (kind, arg) -> result. Kinds:
  ;;   1 call_start  arg = length of the call metadata JSON at the buffer
  ;;                 {"call_id":..,"protocol":..,"sample_rate":..,"stage":..,"params":{..}}
  ;;   2 call_end    no further calls follow
  ;;   3 dtmf        arg = ASCII code of the key: 0-9 * # A-D
  ;;   4 clear       barge-in: drop any audio you hold
  ;;   5 flush       the input ended: write held samples at the buffer and
  ;;                 return their count (>= 0); they flow on like a frame
  ;; Success is 0 (or the flush count); a negative result is a status. Kinds
  ;; you do not know must return 0: new ones may come within v1.
  ;; This plugin holds no audio and no state, so every event succeeds as is.
  ;; Emitting an event, e.g. on a DTMF key: with "dtmf" at 32 and "\"5\"" at 48,
  ;;   (call $emit (i32.const 32) (i32.const 4) (i32.const 48) (i32.const 3))
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (i32.const 0))

  ;; ---- _initialize (optional, not used here) -----------------------------------
  ;; If exported, the host calls it once right after instantiation, before
  ;; vox_buffer (the WASI reactor convention compilers follow). A hand-written
  ;; module rarely needs it: globals and data segments are initialised by
  ;; instantiation itself. It must not be called _start: plugins are reactors.
  ;;   (func (export "_initialize"))
)
