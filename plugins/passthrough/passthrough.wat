;; passthrough — the smallest voxhost plugin: every frame leaves as it came.
;; It is the baseline of every hop benchmark and the ABI in its plainest form.
(module
  (memory (export "memory") 1 1)

  ;; The name of this export is the ABI version marker; it is never called.
  (func (export "voxhost_abi_v1"))

  ;; The frame buffer is the page after its first KiB: 64512 bytes.
  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (result i32) (i32.gt_u (local.get $capacity) (i32.const 64512))
      (then (i32.const 0))
      (else (i32.const 1024))))

  (func (export "vox_process") (param $samples i32) (result i32)
    (local.get $samples)))
