;; Declares 8000 Hz in, 16000 Hz out, and repeats every sample twice.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param $cap i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $cap) (i32.const 32768))
      (then (i32.const 0)) (else (i32.const 1024))))
  (func (export "vox_rate") (param $in i32) (result i32)
    (if (result i32) (i32.eq (local.get $in) (i32.const 8000))
      (then (i32.const 16000)) (else (i32.const -3))))
  (func (export "vox_process") (param $n i32) (result i32)
    (local $i i32) (local $s i32)
    ;; Walk backwards so each input sample is read before it is overwritten.
    (local.set $i (local.get $n))
    (block $done (loop $each
      (br_if $done (i32.eqz (local.get $i)))
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (local.set $s (i32.load16_s offset=1024 (i32.shl (local.get $i) (i32.const 1))))
      (i32.store16 offset=1024 (i32.shl (local.get $i) (i32.const 2)) (local.get $s))
      (i32.store16 offset=1026 (i32.shl (local.get $i) (i32.const 2)) (local.get $s))
      (br $each)))
    (i32.shl (local.get $n) (i32.const 1))))
