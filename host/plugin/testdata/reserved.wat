;; A valid plugin but for one export, named as the host's instrumentation
;; names the start function it moves.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param i32) (result i32) (local.get 0))
  (func (export "voxhost:start")))
