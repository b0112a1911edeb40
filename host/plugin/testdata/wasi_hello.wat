;; Uses the host's WASI: writes "hello" to stdout and "careful" to stderr in
;; _initialize, reads both clocks and random bytes into the buffer in vox_rate
;; (walltime at +0, monotonic time at +8, 16 random bytes at +16), and echoes
;; the buffer's first 2*n bytes to stdout in vox_process(n).
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 0) "hello\n")
  (data (i32.const 8) "careful\n")
  ;; iovecs at 16 and 24, the byte count fd_write returns at 32.
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 16) (local.get $ptr))
    (i32.store (i32.const 20) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 16) (i32.const 1) (i32.const 32))))
  (func (export "_initialize")
    (call $write (i32.const 1) (i32.const 0) (i32.const 6))
    (call $write (i32.const 2) (i32.const 8) (i32.const 8)))
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (i32.gt_u (local.get $capacity) (i32.const 32768))
      (then (return (i32.const 0))))
    (i32.const 1024))
  (func (export "vox_rate") (param $rate i32) (result i32)
    (drop (call $clock_time_get (i32.const 0) (i64.const 1) (i32.const 1024)))
    (drop (call $clock_time_get (i32.const 1) (i64.const 1) (i32.const 1032)))
    (drop (call $random_get (i32.const 1040) (i32.const 16)))
    (local.get $rate))
  (func (export "vox_process") (param $n i32) (result i32)
    (call $write (i32.const 1) (i32.const 1024) (i32.shl (local.get $n) (i32.const 1)))
    (local.get $n)))
