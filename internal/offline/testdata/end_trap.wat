;; Passes frames through, writes a 4-sample tail (1, 2, 3, 4) on flush, and
;; hits unreachable in call_end: a fault after the last audio, which must
;; not cost the audio before it.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (if (i32.eq (local.get $kind) (i32.const 2)) (then unreachable))
    (if (i32.eq (local.get $kind) (i32.const 5))
      (then
        (i64.store (i32.const 1024) (i64.const 0x0004000300020001))
        (return (i32.const 4))))
    (i32.const 0))
  (func (export "vox_process") (param $n i32) (result i32) (local.get $n)))
