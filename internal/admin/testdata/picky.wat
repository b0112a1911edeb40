;; picky — a valid plugin whose vox_init refuses every configuration
;; (StatusBadConfig): it loads, but no pipeline can be built with it, so
;; replacing a plugin that pipelines use with it must be refused.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_init") (param i32) (result i32) (i32.const -2))
  (func (export "vox_process") (param $n i32) (result i32) (local.get $n)))
