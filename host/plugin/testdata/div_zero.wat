;; Divides by the first sample, which is zero in silence: an integer
;; division by zero, a trap.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (drop (i32.div_s (i32.const 1) (i32.load16_s (i32.const 1024))))
    (local.get $n)))
