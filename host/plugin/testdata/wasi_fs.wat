;; Imports WASI's filesystem functions, which the host accepts but backs with
;; no filesystem: vox_process(n) stores the errno of fd_prestat_get(3) as
;; sample 0 and that of path_open(3, "etc/passwd") as sample 1.
(module
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 0) "etc/passwd")
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param $capacity i32) (result i32)
    (if (i32.gt_u (local.get $capacity) (i32.const 32768))
      (then (return (i32.const 0))))
    (i32.const 1024))
  (func (export "vox_process") (param $n i32) (result i32)
    (i32.store16 (i32.const 1024) (call $fd_prestat_get (i32.const 3) (i32.const 16)))
    ;; dirfd 3, no lookup flags, path at 0 (10 bytes), no open flags, read
    ;; rights, no fd flags, new fd at 16.
    (i32.store16 (i32.const 1026)
      (call $path_open (i32.const 3) (i32.const 0) (i32.const 0) (i32.const 10)
        (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 16)))
    (i32.const 2)))
