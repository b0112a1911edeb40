;; Answers each frame with its far-end reference (ABI section 11): what
;; the host handed the plugin as the reference comes out as the frame, so
;; a test sees exactly what a reference-reading plugin received. Frame
;; buffer at 1024, reference at 33792.
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
    (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i32.store16 offset=1024 (i32.shl (local.get $i) (i32.const 1))
          (i32.load16_u offset=33792 (i32.shl (local.get $i) (i32.const 1))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $n))
)
