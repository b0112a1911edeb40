;; The imports of features.wasm.
(module
  (func (export "bump") (param i32) (result i32) (i32.add (local.get 0) (i32.const 100)))
  (global (export "base") i32 (i32.const 1000)))
