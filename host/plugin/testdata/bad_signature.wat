;; vox_process takes an i64 where the ABI needs an i32.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param i64) (result i32) (i32.const 0)))
