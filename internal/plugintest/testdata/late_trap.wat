;; Traps at its 2000th frame with memory to spare: a late fault that is not
;; out of memory (a counter that overflows a table, say). The soak must
;; report it with the frame and the audio time, and no memory hint.
(module
  (memory (export "memory") 1 1)
  (global $frames (mut i32) (i32.const 0))
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param $cap i32) (result i32)
    (if (i32.gt_u (local.get $cap) (i32.const 64512)) (then (return (i32.const 0))))
    (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (global.set $frames (i32.add (global.get $frames) (i32.const 1)))
    (if (i32.eq (global.get $frames) (i32.const 2000)) (then unreachable))
    (local.get $n)))
