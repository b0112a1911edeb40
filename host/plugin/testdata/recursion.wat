;; Recurses without end: the guest stack overflows, a trap.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func $down (param $x i32) (result i32)
    (i32.add (call $down (i32.add (local.get $x) (i32.const 1))) (i32.const 1)))
  (func (export "vox_process") (param $n i32) (result i32)
    (drop (call $down (i32.const 0)))
    (local.get $n)))
