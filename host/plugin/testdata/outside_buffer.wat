;; Returns a buffer address near the end of its one page: the buffer does not fit.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 65000))
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
