;; Subtracts the far-end reference from the frame (saturating): a perfect
;; echo canceller for an echo path of gain 1 and no delay, for the tests of
;; vox_reference (ABI section 11). Frame buffer at 1024, reference at 33792.
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (i32.gt_u (local.get $capacity) (i32.const 32768))
      (then (return (i32.const 0))))
    (i32.const 1024))
  (func (export "vox_reference") (param $capacity i32) (result i32)
    (if (i32.gt_u (local.get $capacity) (i32.const 31744))
      (then (return (i32.const 0))))
    (i32.const 33792))
  (func (export "vox_process") (param $n i32) (result i32)
    (local $i i32) (local $v i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $v (i32.sub
          (i32.load16_s offset=1024 (i32.shl (local.get $i) (i32.const 1)))
          (i32.load16_s offset=33792 (i32.shl (local.get $i) (i32.const 1)))))
        (if (i32.gt_s (local.get $v) (i32.const 32767)) (then (local.set $v (i32.const 32767))))
        (if (i32.lt_s (local.get $v) (i32.const -32768)) (then (local.set $v (i32.const -32768))))
        (i32.store16 offset=1024 (i32.shl (local.get $i) (i32.const 1)) (local.get $v))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $n))
)
