;; Grows its table by as much as it can ask in every vox_process, fills it,
;; and passes the frame on: growth past the host's table cap must fail in
;; the guest with -1 (it once made the host allocate gigabytes per frame).
(module
  (memory (export "memory") 1 1)
  (table $t 1 funcref)
  (func $f)
  (elem declare func $f)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (drop (table.grow $t (ref.null func) (i32.const 0x7fffffff)))
    (drop (table.grow $t (ref.null func) (i32.const 0x10000)))
    (drop (table.grow $t (ref.null func) (i32.const 0xffff)))
    (table.fill $t (i32.const 0) (ref.func $f) (table.size $t))
    (local.get $n)))
