;; Prints 1,000 lines to stdout in every vox_process and passes the frame
;; on: WASI output must go through the same cap as voxhost.log.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 0) "spam\n")
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32) (local $i i32)
    (i32.store (i32.const 16) (i32.const 0))
    (i32.store (i32.const 20) (i32.const 5))
    (loop $lines
      (drop (call $fd_write (i32.const 1) (i32.const 16) (i32.const 1) (i32.const 32)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $lines (i32.lt_u (local.get $i) (i32.const 1000))))
    (local.get $n)))
