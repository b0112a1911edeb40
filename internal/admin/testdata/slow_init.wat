;; Passes audio through, but its vox_init spins for a second of wall clock
;; (within a generous init budget): a slow load, to show that it holds up
;; no other change of plugins.
(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $now (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func $monotonic (result i64)
    (drop (call $now (i32.const 1) (i64.const 1) (i32.const 0)))
    (i64.load (i32.const 0)))
  (func (export "vox_init") (param i32) (result i32) (local $until i64)
    (local.set $until (i64.add (call $monotonic) (i64.const 1000000000)))
    (loop $spin
      (br_if $spin (i64.lt_u (call $monotonic) (local.get $until))))
    (i32.const 0))
  (func (export "vox_process") (param $n i32) (result i32) (local.get $n)))
