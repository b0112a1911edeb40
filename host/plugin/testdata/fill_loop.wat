;; Fills its whole 16 MiB memory over and over in vox_process: one bulk
;; instruction of milliseconds at a time, which must be cut into chunks the
;; budget and the garbage collector can stop between.
(module
  (memory (export "memory") 256 256)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (loop $forever
      (memory.fill (i32.const 0) (i32.const 0) (i32.const 0x1000000))
      (memory.copy (i32.const 0) (i32.const 8) (i32.const 0xfffff8))
      (br $forever))
    (local.get $n)))
