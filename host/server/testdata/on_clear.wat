;; Passes audio through; on EventClear (barge-in, delivered to a relayed
;; call's outbound plugins) it emits "cleared", so a test can see the
;; event arrive.
(module
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "cleared")
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (if (i32.eq (local.get $kind) (i32.const 4))
      (then (call $emit (i32.const 16) (i32.const 7) (i32.const 0) (i32.const 0))))
    (i32.const 0))
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
