;; Asks for 60,000 more pages (3.75 GiB) on every frame. memory.grow must
;; fail inside the guest (it returns -1) and the plugin go on as it was.
(module
  (memory (export "memory") 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (drop (memory.grow (i32.const 60000)))
    (local.get $n)))
