;; Its vox_process never returns: the host must stop it at its budget.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param i32) (result i32)
    (loop $forever (br $forever))
    (local.get 0)))
