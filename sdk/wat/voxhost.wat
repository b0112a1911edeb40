  ;; ==== voxhost.wat: the voxhost SDK for WebAssembly text ====================
  ;;
  ;; Module fields, not a module: a plugin's .wat has the line
  ;;     ;; @include voxhost.wat
  ;; among its fields, and the build (wat.mk beside this file) puts this file
  ;; in its place before wat2wasm assembles it. Every name here starts with
  ;; $vox_. What it needs of the plugin:
  ;;   - the imports $log (voxhost.log) and $emit (voxhost.emit);
  ;;   - one page of memory or more; it uses bytes 768 to 1023 (a scratch
  ;;     area and its strings), so a plugin's own data goes below 768 and its
  ;;     buffer at 1024 or above.
  ;;
  ;; Config (flat JSON objects, e.g. the config at the buffer in vox_init):
  ;;   $vox_find (json len key klen) -> value address, or -1
  ;;   $vox_next_key (json len p) -> address after the next key's ':', or -1;
  ;;       p 0 starts, then pass what it returned; sets $vox_key, $vox_key_len
  ;;   $vox_unknown_key (json len allowed allowed_len) -> first key not in
  ;;       allowed (names each ended by a 0 byte), or 0; sets $vox_key_len
  ;;   $vox_check_keys (json len allowed allowed_len prefix) -> 0, or -2
  ;;       (StatusBadConfig) after logging PREFIX: unknown config key "KEY"
  ;;   $vox_number (p end) -> f64, NaN if not a number
  ;;   $vox_bool (p end) -> 1 true, 0 false, -1 neither
  ;;   $vox_string_is (p end lit litlen) -> 1 if the value is the string lit
  ;; Logs (strings ended by a 0 byte, "...\00" in a data segment):
  ;;   $vox_strlen (p) -> length      $vox_log_str (level p)
  ;; Text for event data (each writes at dst and returns the address after it):
  ;;   $vox_copy (dst src len)            $vox_fmt_int (dst i64)
  ;;   $vox_fmt_scaled (dst i64 decimals) v / 10^decimals, exactly: -1234, 2 -> -12.34
  ;;   $vox_fmt_fixed (dst f64 decimals)  floor(|v| 10^d + 0.5), signed; null for NaN, inf
  ;; Levels (no libm):
  ;;   $vox_exp (f64) -> e^x      $vox_ln (f64) -> ln x      (within 1 ulp)
  ;;   $vox_db_to_gain (db) -> 10^(db/20)   $vox_gain_to_db (gain) -> 20 log10(gain)
  ;;   dBFS are relative to 32767: $vox_gain_to_db (peak / 32767).

  (global $vox_key (mut i32) (i32.const 0))       ;; the key $vox_next_key last read
  (global $vox_key_len (mut i32) (i32.const 0))
  (data (i32.const 992) ": unknown config key \22")  ;; 22 bytes, for $vox_check_keys

  ;; The first byte at or after $p that is not JSON white space (or $end).
  (func $vox_skip_ws (param $p i32) (param $end i32) (result i32)
    (local $c i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (br_if $done (i32.eqz
          (i32.or (i32.or (i32.eq (local.get $c) (i32.const 0x20)) (i32.eq (local.get $c) (i32.const 0x09)))
                  (i32.or (i32.eq (local.get $c) (i32.const 0x0a)) (i32.eq (local.get $c) (i32.const 0x0d))))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $next)))
    (local.get $p))

  ;; The next key of the top-level object of the JSON at $json ($len bytes),
  ;; from $p (0: the start): sets $vox_key and $vox_key_len to the key as
  ;; written and returns the address after its ':', where its value begins;
  ;; -1 after the last key. Every string followed by ':' is a key; nesting is
  ;; tracked by counting brackets outside strings, so the keys of inner
  ;; objects are passed over.
  (func $vox_next_key (param $json i32) (param $len i32) (param $p i32) (result i32)
    (local $end i32) (local $depth i32) (local $c i32) (local $start i32) (local $stop i32)
    (local.set $end (i32.add (local.get $json) (local.get $len)))
    (if (i32.eqz (local.get $p))
      (then                                                   ;; step inside the object
        (local.set $p (local.get $json))
        (block $in
          (loop $open
            (br_if $in (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $c (i32.load8_u (local.get $p)))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br_if $open (i32.ne (local.get $c) (i32.const 0x7b)))))))
    (block $absent
      (loop $scan
        (br_if $absent (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.load8_u (local.get $p)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7b))       ;; '{' or '['
          (then (local.set $depth (i32.add (local.get $depth) (i32.const 1))) (br $scan)))
        (if (i32.eq (i32.or (local.get $c) (i32.const 0x20)) (i32.const 0x7d))       ;; '}' or ']'
          (then (br_if $absent (i32.eqz (local.get $depth)))                         ;; the object's end
                (local.set $depth (i32.sub (local.get $depth) (i32.const 1))) (br $scan)))
        (br_if $scan (i32.ne (local.get $c) (i32.const 0x22)))                        ;; '"'
        ;; A string from $start to $stop; a backslash skips the byte after it.
        (local.set $start (local.get $p))
        (block $closed
          (loop $char
            (br_if $closed (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $c (i32.load8_u (local.get $p)))
            (br_if $closed (i32.eq (local.get $c) (i32.const 0x22)))
            (local.set $p (i32.add (local.get $p)
              (select (i32.const 2) (i32.const 1) (i32.eq (local.get $c) (i32.const 0x5c)))))
            (br $char)))
        (local.set $stop (local.get $p))
        ;; Not followed by ':' (a string value), or inside a nested object: scan on.
        (local.set $p (call $vox_skip_ws (i32.add (local.get $p) (i32.const 1)) (local.get $end)))
        (br_if $absent (i32.ge_u (local.get $p) (local.get $end)))
        (br_if $scan (i32.ne (i32.load8_u (local.get $p)) (i32.const 0x3a)))       ;; ':'
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br_if $scan (local.get $depth))
        (global.set $vox_key (local.get $start))
        (global.set $vox_key_len (i32.sub (local.get $stop) (local.get $start)))
        (return (local.get $p))))
    (i32.const -1))

  ;; 1 if the $n bytes at $a and $b are the same.
  (func $vox_same (param $a i32) (param $b i32) (param $n i32) (result i32)
    (local $k i32)
    (block $differ
      (loop $cmp
        (if (i32.ge_u (local.get $k) (local.get $n))
          (then (return (i32.const 1))))
        (br_if $differ (i32.ne (i32.load8_u (i32.add (local.get $a) (local.get $k)))
                               (i32.load8_u (i32.add (local.get $b) (local.get $k)))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $cmp)))
    (i32.const 0))

  ;; The address of the value of member $key ($klen bytes) at the top level
  ;; of the JSON object at $json ($len bytes), white space skipped, or -1.
  (func $vox_find (param $json i32) (param $len i32) (param $key i32) (param $klen i32) (result i32)
    (local $p i32)
    (block $absent
      (loop $next
        (local.set $p (call $vox_next_key (local.get $json) (local.get $len) (local.get $p)))
        (br_if $absent (i32.lt_s (local.get $p) (i32.const 0)))
        (br_if $next (i32.ne (global.get $vox_key_len) (local.get $klen)))
        (br_if $next (i32.eqz (call $vox_same (global.get $vox_key) (local.get $key) (local.get $klen))))
        (return (call $vox_skip_ws (local.get $p) (i32.add (local.get $json) (local.get $len))))))
    (i32.const -1))

  ;; The first top-level key of the JSON at $json that is not one of the
  ;; names at $allowed ($allowed_len bytes: each name followed by a 0 byte,
  ;; e.g. "gain_db\00mode\00"), or 0 if there is none; $vox_key_len is its
  ;; length. With it a typo'd key is an error, not silently the default.
  (func $vox_unknown_key (param $json i32) (param $len i32) (param $allowed i32) (param $allowed_len i32) (result i32)
    (local $p i32) (local $a i32) (local $name i32) (local $known i32)
    (block $done
      (loop $next
        (local.set $p (call $vox_next_key (local.get $json) (local.get $len) (local.get $p)))
        (br_if $done (i32.lt_s (local.get $p) (i32.const 0)))
        (local.set $known (i32.const 0))
        (local.set $name (local.get $allowed))
        (local.set $a (local.get $allowed))
        (block $listed
          (loop $each
            (br_if $listed (i32.ge_u (local.get $a) (i32.add (local.get $allowed) (local.get $allowed_len))))
            (if (i32.eqz (i32.load8_u (local.get $a)))
              (then                                            ;; a name from $name to $a
                (if (i32.and (i32.eq (i32.sub (local.get $a) (local.get $name)) (global.get $vox_key_len))
                             (call $vox_same (local.get $name) (global.get $vox_key) (global.get $vox_key_len)))
                  (then (local.set $known (i32.const 1)) (br $listed)))
                (local.set $name (i32.add (local.get $a) (i32.const 1)))))
            (local.set $a (i32.add (local.get $a) (i32.const 1)))
            (br $each)))
        (br_if $next (local.get $known))
        (return (global.get $vox_key))))
    (global.set $vox_key_len (i32.const 0))
    (i32.const 0))

  ;; $vox_unknown_key as vox_init uses it: 0, or -2 (StatusBadConfig) after
  ;; logging "PREFIX: unknown config key "KEY"" at error level, where PREFIX
  ;; is the string at $prefix, ended by a 0 byte (the plugin's name).
  (func $vox_check_keys (param $json i32) (param $len i32) (param $allowed i32) (param $allowed_len i32)
                        (param $prefix i32) (result i32)
    (local $key i32) (local $p i32)
    (local.set $key (call $vox_unknown_key (local.get $json) (local.get $len) (local.get $allowed) (local.get $allowed_len)))
    (if (i32.eqz (local.get $key))
      (then (return (i32.const 0))))
    ;; The message in the scratch area, 768 to 991, each part cut to fit.
    (local.set $p (call $vox_copy (i32.const 768) (local.get $prefix)
      (call $vox_min (call $vox_strlen (local.get $prefix)) (i32.const 64))))
    (local.set $p (call $vox_copy (local.get $p) (i32.const 992) (i32.const 22)))
    (local.set $p (call $vox_copy (local.get $p) (local.get $key) (call $vox_min (global.get $vox_key_len) (i32.const 128))))
    (i32.store8 (local.get $p) (i32.const 0x22))
    (call $log (i32.const 3) (i32.const 768) (i32.sub (i32.add (local.get $p) (i32.const 1)) (i32.const 768)))
    (i32.const -2))

  ;; The smaller of two unsigned numbers.
  (func $vox_min (param $a i32) (param $b i32) (result i32)
    (select (local.get $a) (local.get $b) (i32.lt_u (local.get $a) (local.get $b))))

  ;; The length of the string at $p, ended by a 0 byte.
  (func $vox_strlen (param $p i32) (result i32)
    (local $n i32)
    (block $end
      (loop $next
        (br_if $end (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $next)))
    (local.get $n))

  ;; Logs the string at $p (ended by a 0 byte) at $level: 0 debug, 1 info,
  ;; 2 warn, 3 error.
  (func $vox_log_str (param $level i32) (param $p i32)
    (call $log (local.get $level) (local.get $p) (call $vox_strlen (local.get $p))))

  ;; 1 for the JSON value true at $p, 0 for false, -1 for anything else.
  (func $vox_bool (param $p i32) (param $end i32) (result i32)
    (if (i32.and (i32.le_u (i32.add (local.get $p) (i32.const 4)) (local.get $end))
                 (i32.eq (i32.load (local.get $p)) (i32.const 0x65757274)))          ;; "true"
      (then (return (i32.const 1))))
    (if (i32.and (i32.le_u (i32.add (local.get $p) (i32.const 5)) (local.get $end))
                 (i32.and (i32.eq (i32.load (local.get $p)) (i32.const 0x736c6166))  ;; "fals"
                          (i32.eq (i32.load8_u offset=4 (local.get $p)) (i32.const 0x65))))
      (then (return (i32.const 0))))
    (i32.const -1))

  ;; 1 if the value at $p is the JSON string whose bytes between the quotes
  ;; are the $litlen bytes at $lit (escapes compared as written).
  (func $vox_string_is (param $p i32) (param $end i32) (param $lit i32) (param $litlen i32) (result i32)
    (if (i32.gt_u (i32.add (local.get $p) (i32.add (local.get $litlen) (i32.const 2))) (local.get $end))
      (then (return (i32.const 0))))
    (i32.and (i32.and (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x22))
                      (i32.eq (i32.load8_u (i32.add (i32.add (local.get $p) (local.get $litlen)) (i32.const 1)))
                              (i32.const 0x22)))
             (call $vox_same (i32.add (local.get $p) (i32.const 1)) (local.get $lit) (local.get $litlen))))

  ;; Reads the JSON number at $p (before $end): -?digits(.digits)?([eE][+-]?digits)?.
  ;; Returns NaN if there is none (a string, true, false, null...), which
  ;; every range check then rejects. The digits are gathered into an exact
  ;; integer (up to 18 significant ones) and the result is that integer times
  ;; or divided by a power of ten. With at most 15 significant digits and a
  ;; power of at most 10^22 both operands are exact and the one operation
  ;; rounds correctly: the same double every JSON library reads, for numbers
  ;; such as 0.8 or 4.5. Beyond that the result may be off by an ulp.
  (func $vox_number (param $p i32) (param $end i32) (result f64)
    (local $c i32) (local $neg i32) (local $mant i64) (local $sig i32) (local $digits i32)
    (local $e10 i32) (local $exp i32) (local $eneg i32) (local $pow f64) (local $v f64)
    (if (i32.and (i32.lt_u (local.get $p) (local.get $end))
                 (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2d)))             ;; '-'
      (then (local.set $neg (i32.const 1))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))))
    ;; Integer part. Digits past the 18th only scale the value by ten.
    (block $done
      (loop $int
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.sub (i32.load8_u (local.get $p)) (i32.const 0x30)))
        (br_if $done (i32.ge_u (local.get $c) (i32.const 10)))
        (if (i32.lt_u (local.get $sig) (i32.const 18))
          (then (local.set $mant (i64.add (i64.mul (local.get $mant) (i64.const 10))
                                          (i64.extend_i32_u (local.get $c))))
                (if (i32.or (local.get $sig) (local.get $c))                          ;; leading zeros are not significant
                  (then (local.set $sig (i32.add (local.get $sig) (i32.const 1))))))
          (else (local.set $e10 (i32.add (local.get $e10) (i32.const 1)))))
        (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $int)))
    ;; Fraction. Each kept digit divides the result by ten once more.
    (if (i32.and (i32.lt_u (local.get $p) (local.get $end))
                 (i32.eq (i32.load8_u (local.get $p)) (i32.const 0x2e)))             ;; '.'
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (block $done
          (loop $frac
            (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $c (i32.sub (i32.load8_u (local.get $p)) (i32.const 0x30)))
            (br_if $done (i32.ge_u (local.get $c) (i32.const 10)))
            (if (i32.lt_u (local.get $sig) (i32.const 18))
              (then (local.set $mant (i64.add (i64.mul (local.get $mant) (i64.const 10))
                                              (i64.extend_i32_u (local.get $c))))
                    (local.set $e10 (i32.sub (local.get $e10) (i32.const 1)))
                    (if (i32.or (local.get $sig) (local.get $c))
                      (then (local.set $sig (i32.add (local.get $sig) (i32.const 1)))))))
            (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $frac)))))
    (if (i32.eqz (local.get $digits))
      (then (return (f64.const nan))))
    ;; Exponent, capped so that the count cannot overflow (10^999 is inf anyway).
    (if (i32.and (i32.lt_u (local.get $p) (local.get $end))
                 (i32.eq (i32.or (i32.load8_u (local.get $p)) (i32.const 0x20)) (i32.const 0x65)))  ;; 'e' or 'E'
      (then
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (if (i32.lt_u (local.get $p) (local.get $end))
          (then
            (local.set $c (i32.load8_u (local.get $p)))
            (if (i32.or (i32.eq (local.get $c) (i32.const 0x2d)) (i32.eq (local.get $c) (i32.const 0x2b)))  ;; '-' '+'
              (then (local.set $eneg (i32.eq (local.get $c) (i32.const 0x2d)))
                    (local.set $p (i32.add (local.get $p) (i32.const 1)))))))
        (block $done
          (loop $exp
            (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
            (local.set $c (i32.sub (i32.load8_u (local.get $p)) (i32.const 0x30)))
            (br_if $done (i32.ge_u (local.get $c) (i32.const 10)))
            (if (i32.lt_u (local.get $exp) (i32.const 1000))
              (then (local.set $exp (i32.add (i32.mul (local.get $exp) (i32.const 10)) (local.get $c)))))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $exp)))
        (local.set $e10 (i32.add (local.get $e10)
          (select (i32.sub (i32.const 0) (local.get $exp)) (local.get $exp) (local.get $eneg))))))
    ;; value = mant * 10^e10, or mant / 10^-e10; zero stays zero (0e999 is 0, not 0 * inf).
    (if (i64.eqz (local.get $mant))
      (then (return (select (f64.const -0) (f64.const 0) (local.get $neg)))))
    (local.set $v (f64.convert_i64_u (local.get $mant)))
    (local.set $pow (f64.const 1))
    (local.set $exp (select (i32.sub (i32.const 0) (local.get $e10)) (local.get $e10)
                            (i32.lt_s (local.get $e10) (i32.const 0))))
    (block $done
      (loop $scale
        (br_if $done (i32.eqz (local.get $exp)))
        (local.set $pow (f64.mul (local.get $pow) (f64.const 10)))
        (local.set $exp (i32.sub (local.get $exp) (i32.const 1)))
        (br $scale)))
    (local.set $v (if (result f64) (i32.lt_s (local.get $e10) (i32.const 0))
      (then (f64.div (local.get $v) (local.get $pow)))
      (else (f64.mul (local.get $v) (local.get $pow)))))
    (select (f64.neg (local.get $v)) (local.get $v) (local.get $neg)))

  ;; ---- Text ------------------------------------------------------------------

  ;; Copies $len bytes from $src to $dst; returns $dst + $len.
  (func $vox_copy (param $dst i32) (param $src i32) (param $len i32) (result i32)
    (memory.copy (local.get $dst) (local.get $src) (local.get $len))
    (i32.add (local.get $dst) (local.get $len)))

  ;; Writes $v / 10^$decimals at $dst with exactly $decimals digits after the
  ;; point (0 to 18; no point for 0): -1234, 2 -> -12.34; 5, 3 -> 0.005.
  ;; Integer arithmetic only, so every SDK writes the same. Returns the end.
  (func $vox_fmt_scaled (param $dst i32) (param $v i64) (param $decimals i32) (result i32)
    (local $u i64) (local $n i32) (local $div i64)
    (local.set $decimals (select (i32.const 18) (local.get $decimals) (i32.gt_u (local.get $decimals) (i32.const 18))))
    (local.set $u (select (i64.sub (i64.const 0) (local.get $v)) (local.get $v) (i64.lt_s (local.get $v) (i64.const 0))))
    (if (i64.lt_s (local.get $v) (i64.const 0))
      (then (i32.store8 (local.get $dst) (i32.const 0x2d))
            (local.set $dst (i32.add (local.get $dst) (i32.const 1)))))
    ;; n digits, at least decimals + 1; div = 10^(n-1).
    (local.set $n (i32.const 1))
    (local.set $div (i64.const 1))
    (block $counted
      (loop $count
        (br_if $counted (i32.and (i64.lt_u (i64.div_u (local.get $u) (local.get $div)) (i64.const 10))
                                 (i32.gt_u (local.get $n) (local.get $decimals))))
        (local.set $div (i64.mul (local.get $div) (i64.const 10)))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $count)))
    (loop $digit
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (i32.store8 (local.get $dst)
        (i32.add (i32.const 0x30) (i32.wrap_i64 (i64.rem_u (i64.div_u (local.get $u) (local.get $div)) (i64.const 10)))))
      (local.set $dst (i32.add (local.get $dst) (i32.const 1)))
      (if (i32.and (i32.eq (local.get $n) (local.get $decimals)) (i32.gt_u (local.get $n) (i32.const 0)))
        (then (i32.store8 (local.get $dst) (i32.const 0x2e))
              (local.set $dst (i32.add (local.get $dst) (i32.const 1)))))
      (local.set $div (i64.div_u (local.get $div) (i64.const 10)))
      (br_if $digit (local.get $n)))
    (local.get $dst))

  ;; Writes the integer $v in decimal at $dst; returns the end.
  (func $vox_fmt_int (param $dst i32) (param $v i64) (result i32)
    (call $vox_fmt_scaled (local.get $dst) (local.get $v) (i32.const 0)))

  ;; Writes $v rounded to $decimals digits after the point (0 to 9) at $dst:
  ;; r = floor(|v| * 10^decimals + 0.5), then as $vox_fmt_scaled writes r
  ;; (negative if v is, unless r is 0); null for NaN, infinities and
  ;; |v| * 10^decimals >= 1e18. The same arithmetic as every SDK's fixed().
  (func $vox_fmt_fixed (param $dst i32) (param $v f64) (param $decimals i32) (result i32)
    (local $x f64) (local $pow f64) (local $r i64) (local $k i32)
    (local.set $decimals (select (i32.const 9) (local.get $decimals) (i32.gt_u (local.get $decimals) (i32.const 9))))
    (local.set $pow (f64.const 1))
    (block $done
      (loop $scale
        (br_if $done (i32.ge_u (local.get $k) (local.get $decimals)))
        (local.set $pow (f64.mul (local.get $pow) (f64.const 10)))              ;; exact up to 10^22
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $scale)))
    (local.set $x (f64.mul (f64.abs (local.get $v)) (local.get $pow)))
    (if (i32.eqz (f64.lt (local.get $x) (f64.const 1e18)))                       ;; NaN too
      (then (i32.store (local.get $dst) (i32.const 0x6c6c756e))                  ;; "null"
            (return (i32.add (local.get $dst) (i32.const 4)))))
    (local.set $r (i64.trunc_f64_s (f64.floor (f64.add (local.get $x) (f64.const 0.5)))))
    (call $vox_fmt_scaled (local.get $dst)
      (select (i64.sub (i64.const 0) (local.get $r)) (local.get $r) (f64.lt (local.get $v) (f64.const 0)))
      (local.get $decimals)))

  ;; ---- Levels ----------------------------------------------------------------

  ;; e^x within 1 unit in the last place (fdlibm's algorithm: x = k ln2 + r
  ;; with ln 2 in two parts, then a rational approximation of e^r); +inf
  ;; above 709.78, 0 below -745.13.
  (func $vox_exp (param $x f64) (result f64)
    (local $k i32) (local $hi f64) (local $lo f64) (local $r f64) (local $rr f64) (local $c f64) (local $y f64)
    (if (f64.ne (local.get $x) (local.get $x)) (then (return (local.get $x))))   ;; NaN
    (if (f64.gt (local.get $x) (f64.const 709.782712893383973096)) (then (return (f64.const inf))))
    (if (f64.lt (local.get $x) (f64.const -745.13321910194110842)) (then (return (f64.const 0))))
    (if (f64.lt (f64.abs (local.get $x)) (f64.const 3.725290298461914e-9))
      (then (return (f64.add (f64.const 1) (local.get $x)))))
    (if (f64.ge (f64.abs (local.get $x)) (f64.const 0.34657359027997264))        ;; ln2 / 2
      (then
        (local.set $k (i32.trunc_f64_s (f64.add (f64.mul (local.get $x) (f64.const 1.44269504088896338700))
          (select (f64.const -0.5) (f64.const 0.5) (f64.lt (local.get $x) (f64.const 0))))))
        (local.set $hi (f64.sub (local.get $x)
          (f64.mul (f64.convert_i32_s (local.get $k)) (f64.const 6.93147180369123816490e-01))))
        (local.set $lo (f64.mul (f64.convert_i32_s (local.get $k)) (f64.const 1.90821492927058770002e-10))))
      (else (local.set $hi (local.get $x))))
    (local.set $r (f64.sub (local.get $hi) (local.get $lo)))
    (local.set $rr (f64.mul (local.get $r) (local.get $r)))
    (local.set $c (f64.sub (local.get $r) (f64.mul (local.get $rr)
      (f64.add (f64.const 1.66666666666666019037e-01) (f64.mul (local.get $rr)
      (f64.add (f64.const -2.77777777770155933842e-03) (f64.mul (local.get $rr)
      (f64.add (f64.const 6.61375632143793436117e-05) (f64.mul (local.get $rr)
      (f64.add (f64.const -1.65339022054652515390e-06) (f64.mul (local.get $rr) (f64.const 4.13813679705723846039e-08))))))))))))
    (local.set $y (f64.add (f64.const 1) (f64.add (f64.sub
      (f64.div (f64.mul (local.get $r) (local.get $c)) (f64.sub (f64.const 2) (local.get $c)))
      (local.get $lo)) (local.get $hi))))
    ;; y * 2^k, in two steps where 2^k alone is not a normal number.
    (if (i32.gt_s (local.get $k) (i32.const 1023))
      (then (local.set $y (f64.mul (local.get $y) (f64.const 0x1p1023)))
            (local.set $k (i32.sub (local.get $k) (i32.const 1023)))))
    (if (i32.lt_s (local.get $k) (i32.const -1022))
      (then (local.set $y (f64.mul (local.get $y) (f64.const 0x1p-1022)))
            (local.set $k (i32.add (local.get $k) (i32.const 1022)))))
    (f64.mul (local.get $y)
      (f64.reinterpret_i64 (i64.shl (i64.extend_i32_u (i32.add (local.get $k) (i32.const 1023))) (i64.const 52)))))

  ;; ln x within 1 unit in the last place (fdlibm's algorithm: x = 2^k (1+f)
  ;; with sqrt(2)/2 < 1+f < sqrt(2), then a polynomial in s = f/(2+f));
  ;; -inf for 0, NaN below 0 and for NaN, +inf for +inf.
  (func $vox_ln (param $x f64) (result f64)
    (local $u i64) (local $hx i32) (local $k i32) (local $f f64) (local $hfsq f64) (local $s f64)
    (local $z f64) (local $w f64) (local $dk f64)
    (if (f64.eq (local.get $x) (f64.const 0)) (then (return (f64.const -inf))))
    (if (i32.eqz (f64.gt (local.get $x) (f64.const 0))) (then (return (f64.const nan))))
    (if (f64.eq (local.get $x) (f64.const inf)) (then (return (local.get $x))))
    (if (f64.lt (local.get $x) (f64.const 0x1p-1022))                           ;; subnormal: scale by 2^54
      (then (local.set $x (f64.mul (local.get $x) (f64.const 0x1p54)))
            (local.set $k (i32.const -54))))
    (local.set $u (i64.reinterpret_f64 (local.get $x)))
    (local.set $hx (i32.add (i32.wrap_i64 (i64.shr_u (local.get $u) (i64.const 32)))
                            (i32.const 0x95f62)))                               ;; 0x3ff00000 - 0x3fe6a09e
    (local.set $k (i32.add (local.get $k) (i32.sub (i32.shr_u (local.get $hx) (i32.const 20)) (i32.const 0x3ff))))
    (local.set $hx (i32.add (i32.and (local.get $hx) (i32.const 0x000fffff)) (i32.const 0x3fe6a09e)))
    (local.set $f (f64.sub (f64.reinterpret_i64 (i64.or
        (i64.shl (i64.extend_i32_u (local.get $hx)) (i64.const 32))
        (i64.and (local.get $u) (i64.const 0xffffffff))))
      (f64.const 1)))
    (local.set $hfsq (f64.mul (f64.mul (f64.const 0.5) (local.get $f)) (local.get $f)))
    (local.set $s (f64.div (local.get $f) (f64.add (f64.const 2) (local.get $f))))
    (local.set $z (f64.mul (local.get $s) (local.get $s)))
    (local.set $w (f64.mul (local.get $z) (local.get $z)))
    (local.set $dk (f64.convert_i32_s (local.get $k)))
    ;; s (hfsq + t1 + t2) + k ln2_lo - hfsq + f + k ln2_hi
    (f64.add (f64.add (f64.sub (f64.add
      (f64.mul (local.get $s) (f64.add (local.get $hfsq) (f64.add
        (f64.mul (local.get $w) (f64.add (f64.const 3.999999999940941908e-01) (f64.mul (local.get $w)
          (f64.add (f64.const 2.222219843214978396e-01) (f64.mul (local.get $w) (f64.const 1.531383769920937332e-01))))))
        (f64.mul (local.get $z) (f64.add (f64.const 6.666666666666735130e-01) (f64.mul (local.get $w)
          (f64.add (f64.const 2.857142874366239149e-01) (f64.mul (local.get $w)
            (f64.add (f64.const 1.818357216161805012e-01) (f64.mul (local.get $w) (f64.const 1.479819860511658591e-01)))))))))))
      (f64.mul (local.get $dk) (f64.const 1.90821492927058770002e-10)))
      (local.get $hfsq)) (local.get $f))
      (f64.mul (local.get $dk) (f64.const 6.93147180369123816490e-01))))

  ;; 10^(db/20), the linear gain of a level in dB.
  (func $vox_db_to_gain (param $db f64) (result f64)
    (call $vox_exp (f64.mul (local.get $db) (f64.const 0.11512925464970228420))))  ;; ln(10) / 20

  ;; 20 log10(gain), the level in dB of a linear gain; -inf for 0.
  (func $vox_gain_to_db (param $gain f64) (result f64)
    (f64.mul (call $vox_ln (local.get $gain)) (f64.const 8.68588963806503655302)))  ;; 20 / ln(10)
  ;; ==== end of voxhost.wat ===================================================
