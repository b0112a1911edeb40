;; Passes audio through; on a DTMF key it asks the host to clear the far
;; end's queued audio (a Twilio "clear") and emits "key" with the digit.
(module
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "clear")
  (data (i32.const 32) "key")
  (data (i32.const 40) "\"?\"")
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (if (i32.eq (local.get $kind) (i32.const 3))
      (then
        (i32.store8 (i32.const 41) (local.get $arg))
        (call $emit (i32.const 32) (i32.const 3) (i32.const 40) (i32.const 3))
        (call $emit (i32.const 16) (i32.const 5) (i32.const 0) (i32.const 0))))
    (i32.const 0))
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
