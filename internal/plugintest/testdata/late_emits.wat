;; Emits well at first and badly later: from its 1000th frame on, every
;; 100th frame emits "level" with data missing its closing brace, which the
;; host drops (ABI.md §4); and on every DTMF key it emits "dtmf" with the
;; key as a JSON number, valid JSON but not the string the ABI names. The
;; dtmf check catches the second at once; only the soak sees the first.
(module
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "level")
  (data (i32.const 32) "{\"db\":-3")
  (data (i32.const 48) "dtmf")
  (data (i32.const 64) "5")
  (global $frames (mut i32) (i32.const 0))
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param $cap i32) (result i32)
    (if (i32.gt_u (local.get $cap) (i32.const 64512)) (then (return (i32.const 0))))
    (i32.const 1024))
  (func (export "vox_event") (param $kind i32) (param $arg i32) (result i32)
    (if (i32.eq (local.get $kind) (i32.const 3))
      (then (call $emit (i32.const 48) (i32.const 4) (i32.const 64) (i32.const 1))))
    (i32.const 0))
  (func (export "vox_process") (param $n i32) (result i32)
    (global.set $frames (i32.add (global.get $frames) (i32.const 1)))
    (if (i32.and
          (i32.ge_u (global.get $frames) (i32.const 1000))
          (i32.eqz (i32.rem_u (global.get $frames) (i32.const 100))))
      (then (call $emit (i32.const 16) (i32.const 5) (i32.const 32) (i32.const 8))))
    (local.get $n)))
