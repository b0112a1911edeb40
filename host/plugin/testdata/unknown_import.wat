;; Imports a function the host does not provide.
(module
  (import "env" "get_time" (func (result i64)))
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
