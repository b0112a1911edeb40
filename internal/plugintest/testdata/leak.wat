;; Leaks 256 bytes a frame, as a plugin that mallocs per frame and never
;; frees does: a bump pointer that grows memory by a page when it runs out,
;; up to 64 pages (4 MiB), then traps. The short checks pass it; the soak
;; must say that memory grew, and by how much.
(module
  (memory (export "memory") 1 64)
  (global $heap (mut i32) (i32.const 65536))
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param $cap i32) (result i32)
    (if (i32.gt_u (local.get $cap) (i32.const 64512)) (then (return (i32.const 0))))
    (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (global.set $heap (i32.add (global.get $heap) (i32.const 256)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.lt_s (memory.grow (i32.const 1)) (i32.const 0))
          (then unreachable))))
    (local.get $n)))
