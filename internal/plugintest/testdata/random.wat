;; Overwrites every frame with random bytes from WASI: valid, but its output
;; differs between two instances fed the same input.
(module
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (drop (call $random_get (i32.const 1024) (i32.shl (local.get $n) (i32.const 1))))
    (local.get $n)))
