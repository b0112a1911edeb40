;; Emits, in every frame, one event the host must pass on and one of each
;; kind ABI.md §4 makes it drop: data missing its closing brace, data that
;; is not UTF-8, a 65-byte name, a name with an upper-case letter, data
;; past the end of memory and 4097 bytes of data.
(module
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1 1)
  (data (i32.const 16) "level")
  (data (i32.const 32) "{\"db\":-3}")
  (data (i32.const 48) "\"\ff\"")
  (data (i32.const 64) "Speech")
  (data (i32.const 128) "a_name_of_sixty_five_bytes_is_one_byte_longer_than_the_abi_allows")
  (func (export "voxhost_abi_v1"))
  (func (export "vox_buffer") (param i32) (result i32)
    (if (i32.gt_u (local.get 0) (i32.const 32768)) (then (return (i32.const 0))))
    (i32.const 32768))
  (func (export "vox_process") (param $n i32) (result i32)
    (call $emit (i32.const 16) (i32.const 5) (i32.const 32) (i32.const 9))     ;; passed on
    (call $emit (i32.const 16) (i32.const 5) (i32.const 32) (i32.const 8))     ;; invalid data
    (call $emit (i32.const 16) (i32.const 5) (i32.const 48) (i32.const 3))     ;; invalid data
    (call $emit (i32.const 128) (i32.const 65) (i32.const 0) (i32.const 0))    ;; bad name
    (call $emit (i32.const 64) (i32.const 6) (i32.const 0) (i32.const 0))      ;; bad name
    (call $emit (i32.const 16) (i32.const 5) (i32.const 65530) (i32.const 8))  ;; out of bounds
    (call $emit (i32.const 16) (i32.const 5) (i32.const 32) (i32.const 4097))  ;; oversize
    (local.get $n)))
