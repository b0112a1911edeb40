;; Asks the host's WASI for as much work as one call can: fd_write with a
;; million iovecs and with 1,024 iovecs of 16 MiB each, random_get of 16
;; MiB, poll_oneoff with 300,000 subscriptions, forever. Host functions
;; must cap what they are asked and count their time against the budget.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll_oneoff (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 256 256)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 65536))
  (func (export "vox_process") (param $n i32) (result i32) (local $i i32)
    ;; 1,024 iovecs at 0, each the whole memory.
    (loop $vec
      (i32.store (i32.shl (local.get $i) (i32.const 3)) (i32.const 0))
      (i32.store (i32.add (i32.shl (local.get $i) (i32.const 3)) (i32.const 4)) (i32.const 0x1000000))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $vec (i32.lt_u (local.get $i) (i32.const 1024))))
    (loop $forever
      (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1000000) (i32.const 8192)))
      (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1024) (i32.const 8192)))
      (drop (call $random_get (i32.const 65536) (i32.const 0xff0000)))
      (drop (call $poll_oneoff (i32.const 0) (i32.const 0) (i32.const 300000) (i32.const 8192)))
      (br $forever))
    (local.get $n)))
