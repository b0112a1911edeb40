;; A plugin that is slow to set up, as a large model or table built at start
;; would be: vox_init logs "setup begin", spins 100 million loop iterations
;; (~100 ms here), then logs "setup end". The logs let a test count the
;; set-ups that run at once; the spin makes them overlap unless the host
;; bounds them.
(module
  (import "voxhost" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "setup begin")
  (data (i32.const 32) "setup end")
  (global $sink (mut i32) (i32.const 0))
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_init") (param i32) (result i32)
    (local $i i32)
    (call $log (i32.const 1) (i32.const 16) (i32.const 11))
    (block $done (loop $spin
      (br_if $done (i32.ge_u (local.get $i) (i32.const 100000000)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $spin)))
    ;; Kept in a global so that no compiler may drop the loop.
    (global.set $sink (local.get $i))
    (call $log (i32.const 1) (i32.const 32) (i32.const 9))
    (i32.const 0))
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
