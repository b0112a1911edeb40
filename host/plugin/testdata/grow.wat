;; Grows its memory by a page on every frame, then doubles each sample: the
;; host must re-acquire its view of the buffer after each call.
(module
  (memory (export "memory") 1 8)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (local $p i32) (local $end i32)
    (drop (memory.grow (i32.const 1)))
    (local.set $p (i32.const 1024))
    (local.set $end (i32.add (i32.const 1024) (i32.shl (local.get $n) (i32.const 1))))
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (i32.store16 (local.get $p) (i32.shl (i32.load16_s (local.get $p)) (i32.const 1)))
      (local.set $p (i32.add (local.get $p) (i32.const 2)))
      (br $each)))
    (local.get $n)))
