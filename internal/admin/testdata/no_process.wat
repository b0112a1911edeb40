;; no_process — a module that is no plugin: vox_process is missing. Uploading
;; it must be refused with the validator's reason.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024)))
