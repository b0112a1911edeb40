;; Recurses 4,000 calls deep in every vox_process, then returns: the machine
;; stack must grow past the kept handle's first one and keep every frame.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func $down (param $x i32) (result i32)
    (if (result i32) (i32.eqz (local.get $x))
      (then (i32.const 0))
      (else (i32.add (call $down (i32.sub (local.get $x) (i32.const 1))) (i32.const 1)))))
  (func (export "vox_process") (param $n i32) (result i32)
    (if (i32.ne (call $down (i32.const 4000)) (i32.const 4000)) (then unreachable))
    (local.get $n)))
