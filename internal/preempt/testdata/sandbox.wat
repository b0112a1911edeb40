;; What the sandbox's rewrite must change only in cost: tables without a
;; maximum (two of them, which share the host's cap), bulk memory operations of any size, and a loop of them.
(module
  (memory (export "memory") 4 4)
  (table $t 2 funcref)
  (table $u 1 4 externref)
  (table $v 1 funcref)
  (func $f)
  (elem (table $t) (i32.const 0) func $f)
  ;; grow: table.grow $t by delta, returns the old size or -1.
  (func (export "grow") (param $delta i32) (result i32)
    (table.grow $t (ref.null func) (local.get $delta)))
  (func (export "grow_u") (param $delta i32) (result i32)
    (table.grow $u (ref.null extern) (local.get $delta)))
  (func (export "grow_v") (param $delta i32) (result i32)
    (table.grow $v (ref.null func) (local.get $delta)))
  (func (export "fill") (param $d i32) (param $v i32) (param $n i32)
    (memory.fill (local.get $d) (local.get $v) (local.get $n)))
  (func (export "copy") (param $d i32) (param $s i32) (param $n i32)
    (memory.copy (local.get $d) (local.get $s) (local.get $n)))
  ;; pattern writes byte i*7+1 at every address below $n.
  (func (export "pattern") (param $n i32) (local $i i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i32.store8 (local.get $i) (i32.add (i32.mul (local.get $i) (i32.const 7)) (i32.const 1)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))
  ;; sum adds every byte below $n.
  (func (export "sum") (param $n i32) (result i64) (local $i i32) (local $s i64)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $s (i64.add (local.get $s) (i64.load8_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $s))
  ;; fill_many runs $k fills of $n bytes at 0: a loop of bulk operations.
  (func (export "fill_many") (param $k i32) (param $n i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $k)))
        (memory.fill (i32.const 0) (local.get $k) (local.get $n))
        (local.set $k (i32.sub (local.get $k) (i32.const 1)))
        (br $next))))
)
