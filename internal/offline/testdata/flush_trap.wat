;; Passes frames through and hits unreachable when the input ends (flush).
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (if (i32.eq (local.get $kind) (i32.const 5)) (then unreachable))
    (i32.const 0))
  (func (export "vox_process") (param $n i32) (result i32) (local.get $n)))
