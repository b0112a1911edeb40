;; Passes audio through after spinning 4 million loop iterations per frame
;; (~4 ms here): a plugin that stays inside a generous budget but, with a
;; few stages in a few calls, wants more CPU than the machine has.
(module
  (memory (export "memory") 1 1)
  (global $sink (mut i32) (i32.const 0))
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (local $i i32)
    (block $done (loop $spin
      (br_if $done (i32.ge_u (local.get $i) (i32.const 4000000)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $spin)))
    ;; Kept in a global so that no compiler may drop the loop.
    (global.set $sink (local.get $i))
    (local.get $n)))
