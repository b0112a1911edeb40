;; Its start function never returns, so not even the load-time trial
;; instance can be made.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func $spin (loop $forever (br $forever)))
  (start $spin)
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
