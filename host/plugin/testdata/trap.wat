;; Passes frames through, then hits unreachable at its third frame.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (global $frames (mut i32) (i32.const 0))
  (func (export "vox_process") (param $n i32) (result i32)
    (global.set $frames (i32.add (global.get $frames) (i32.const 1)))
    (if (i32.eq (global.get $frames) (i32.const 3)) (then unreachable))
    (local.get $n)))
