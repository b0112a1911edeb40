;; Reports what the host tells it: logs "hello" at init, emits "digit" with the
;; DTMF key as a JSON string, echoes call_start metadata as "meta", swallows
;; every other frame and writes a 4-sample tail on flush.
(module
  (import "voxhost" "log" (func $log (param i32 i32 i32)))
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "hello")
  (data (i32.const 32) "digit")
  (data (i32.const 40) "\"?\"")
  (data (i32.const 48) "meta")
  (data (i32.const 56) "Bad Name")
  (global $frames (mut i32) (i32.const 0))
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_init") (param i32) (result i32)
    (call $log (i32.const 1) (i32.const 16) (i32.const 5))
    (i32.const 0))
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (if (i32.eq (local.get $kind) (i32.const 1))
      (then (call $emit (i32.const 48) (i32.const 4) (i32.const 1024) (local.get $arg))))
    (if (i32.eq (local.get $kind) (i32.const 3))
      (then
        (i32.store8 (i32.const 41) (local.get $arg))
        (call $emit (i32.const 32) (i32.const 5) (i32.const 40) (i32.const 3))
        ;; a name the ABI forbids and an out-of-bounds payload: both dropped
        (call $emit (i32.const 56) (i32.const 8) (i32.const 0) (i32.const 0))
        (call $emit (i32.const 32) (i32.const 5) (i32.const 65530) (i32.const 100))))
    (if (i32.eq (local.get $kind) (i32.const 5))
      (then
        (i64.store (i32.const 1024) (i64.const 0x0004000300020001))
        (return (i32.const 4))))
    (i32.const 0))
  (func (export "vox_process") (param $n i32) (result i32)
    (global.set $frames (i32.add (global.get $frames) (i32.const 1)))
    (if (result i32) (i32.and (global.get $frames) (i32.const 1))
      (then (local.get $n)) (else (i32.const 0)))))
