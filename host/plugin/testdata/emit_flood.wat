;; Emits "spam" 10,000 times in every frame: the host must keep only its
;; per-call quota and count the rest as dropped.
(module
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "spam")
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (local $i i32)
    (block $done (loop $again
      (br_if $done (i32.ge_u (local.get $i) (i32.const 10000)))
      (call $emit (i32.const 16) (i32.const 4) (i32.const 0) (i32.const 0))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $again)))
    (local.get $n)))
