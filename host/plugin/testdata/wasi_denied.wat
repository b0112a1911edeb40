;; Imports what the host's WASI does not offer: a socket function wazero has,
;; one it lacks (a WasmEdge extension), a name WASI does not define, and
;; fd_write with the wrong type.
(module
  (import "wasi_snapshot_preview1" "sock_accept" (func (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_open" (func (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_spawn" (func (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func (param i32) (result i32)))
  (memory (export "memory") 1 1)
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32) (i32.const 1024))
  (func (export "vox_process") (param i32) (result i32) (local.get 0)))
