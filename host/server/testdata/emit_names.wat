;; Emits a new event name in every emit it may make: "speech_start" once per
;; frame, then 31 names never used before ("naaaaaaaa", "nbaaaaaaa", ...),
;; all valid. A host that took event names as metric labels as they come
;; would grow a series for each.
(module
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "speech_start")
  (data (i32.const 32) "n")
  (global $next (mut i32) (i32.const 0))
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  ;; name writes $next as eight letters a..p (a hex digit each, lowest
  ;; first) after the "n" at 32.
  (func $name (param $v i32)
    (local $k i32)
    (block $done (loop $digit
      (br_if $done (i32.ge_u (local.get $k) (i32.const 8)))
      (i32.store8 (i32.add (i32.const 33) (local.get $k))
        (i32.add (i32.const 97) (i32.and (local.get $v) (i32.const 15))))
      (local.set $v (i32.shr_u (local.get $v) (i32.const 4)))
      (local.set $k (i32.add (local.get $k) (i32.const 1)))
      (br $digit))))
  (func (export "vox_process") (param $n i32) (result i32)
    (local $i i32)
    (call $emit (i32.const 16) (i32.const 12) (i32.const 0) (i32.const 0))
    (block $done (loop $again
      (br_if $done (i32.ge_u (local.get $i) (i32.const 31)))
      (call $name (global.get $next))
      (call $emit (i32.const 32) (i32.const 9) (i32.const 0) (i32.const 0))
      (global.set $next (i32.add (global.get $next) (i32.const 1)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $again)))
    (local.get $n)))
