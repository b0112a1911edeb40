;; Declares 1000 pages (62.5 MiB), more than the host's default limit.
(module
  (memory (export "memory") 1000 1000)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
