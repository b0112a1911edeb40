;; negate — version 1 of the plugin the admin tests replace while calls run:
;; every sample s leaves as -s (-32768 saturates to 32767).
(module
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $capacity) (i32.const 64512))
      (then (i32.const 0))
      (else (i32.const 1024))))
  (func (export "vox_process") (param $n i32) (result i32)
    (local $p i32) (local $end i32) (local $s i32)
    (local.set $p (i32.const 1024))
    (local.set $end (i32.add (i32.const 1024) (i32.shl (local.get $n) (i32.const 1))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $s (i32.sub (i32.const 0) (i32.load16_s (local.get $p))))
        (if (i32.gt_s (local.get $s) (i32.const 32767))
          (then (local.set $s (i32.const 32767))))
        (i32.store16 (local.get $p) (local.get $s))
        (local.set $p (i32.add (local.get $p) (i32.const 2)))
        (br $next)))
    (local.get $n)))
