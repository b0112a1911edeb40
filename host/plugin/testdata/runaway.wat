;; Runs away in the way the frame length asks, so one module tests every
;; shape of code the budget must stop:
;;   vox_process(1): a loop that never ends
;;   vox_process(2): a loop of voxhost.log calls that never ends
;;   vox_process(3): fib(60), by exponential recursion without any loop
;;   vox_process(4): a loop of 60 KiB memory.fill that never ends
;;   vox_process(5): slow but finite: 3000000 iterations of a short loop
;;   vox_process(6): a loop of 60 KiB memory.copy that never ends
;;   vox_process(n): for any other n, the frame passes through
;;   vox_event(3, key), a DTMF key: a loop that never ends
(module
  (import "voxhost" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "spin")
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func $fib (param $n i64) (result i64)
    (if (result i64) (i64.lt_u (local.get $n) (i64.const 2))
      (then (local.get $n))
      (else (i64.add (call $fib (i64.sub (local.get $n) (i64.const 1)))
                     (call $fib (i64.sub (local.get $n) (i64.const 2)))))))
  (func (export "vox_process") (param $n i32) (result i32)
    (block $pass
      (block $copy
        (block $slow
          (block $fill
            (block $recursion
              (block $logs
                (block $plain
                  (br_table $pass $plain $logs $recursion $fill $slow $copy $pass (local.get $n)))
                (call $plain)
                (br $pass))
              (call $logs)
              (br $pass))
            (call $recursion)
            (br $pass))
          (call $fill)
          (br $pass))
        (call $slow)
        (br $pass))
      (call $copy))
    (local.get $n))
  (func $plain (loop $forever (br $forever)))
  (func $logs (loop $forever (call $log (i32.const 0) (i32.const 16) (i32.const 4)) (br $forever)))
  (func $recursion (drop (call $fib (i64.const 60))))
  (func $fill (loop $forever (memory.fill (i32.const 4096) (i32.const 0) (i32.const 61440)) (br $forever)))
  (func $copy (loop $forever (memory.copy (i32.const 4096) (i32.const 0) (i32.const 61440)) (br $forever)))
  (func $slow (local $i i32)
    (local.set $i (i32.const 3000000))
    (loop $again
      (local.set $i (i32.sub (local.get $i) (i32.const 1)))
      (br_if $again (local.get $i))))
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (if (i32.eq (local.get $kind) (i32.const 3))
      (then (loop $forever (br $forever))))
    (i32.const 0)))
