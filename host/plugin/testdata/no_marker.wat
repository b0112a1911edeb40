;; Implements the functions but lacks the version marker.
(module
  (memory (export "memory") 1 1)
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
