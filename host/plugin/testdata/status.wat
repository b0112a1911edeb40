;; Rejects its config when it holds the byte 'x' and fails frames longer than 160 samples.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_init") (param $len i32) (result i32)
    (local $i i32)
    (block $done (loop $scan
      (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
      (if (i32.eq (i32.load8_u offset=1024 (local.get $i)) (i32.const 120)) (then (return (i32.const -2))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $scan)))
    (i32.const 0))
  (func (export "vox_process") (param $n i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $n) (i32.const 160))
      (then (i32.const -4)) (else (local.get $n)))))
