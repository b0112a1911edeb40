package examples_test

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	voxhost "github.com/voxhost/voxhost/sdk/go"
)

// helperModule is a module built from an SDK that exports its helpers, for
// comparing them with the Go SDK's: fixed(f64, decimals) and scaled(i64,
// decimals) write their text at out() and return its length; exp and ln.
type helperModule struct {
	mod                        api.Module
	fixed, scaled, exp, ln, at api.Function
}

// cHelpers exports the C SDK's (sdk/c/voxhost.h) text and level helpers.
const cHelpers = `#define VOXHOST_IMPLEMENTATION
#include "voxhost.h"
static char out[64];
VOX_EXPORT("out") int32_t out_at(void) { return (int32_t)(uint32_t)out; }
VOX_EXPORT("fixed") int32_t fixed(double v, int32_t d) { vox_text t = vox_text_init(out, sizeof out); return vox_text_fixed(&t, v, d)->len; }
VOX_EXPORT("scaled") int32_t scaled(int64_t v, int32_t d) { vox_text t = vox_text_init(out, sizeof out); return vox_text_scaled(&t, v, d)->len; }
VOX_EXPORT("exp") double exp_(double x) { return vox_exp(x); }
VOX_EXPORT("ln") double ln_(double x) { return vox_ln(x); }
VOX_PROCESS { return samples; }
`

// watHelpers exports the WAT SDK's (sdk/wat/voxhost.wat).
const watHelpers = `(module
  (import "voxhost" "log" (func $log (param i32 i32 i32)))
  (import "voxhost" "emit" (func $emit (param i32 i32 i32 i32)))
  (memory (export "memory") 1 1)
  (func (export "out") (result i32) (i32.const 256))
  (func (export "fixed") (param f64 i32) (result i32)
    (i32.sub (call $vox_fmt_fixed (i32.const 256) (local.get 0) (local.get 1)) (i32.const 256)))
  (func (export "scaled") (param i64 i32) (result i32)
    (i32.sub (call $vox_fmt_scaled (i32.const 256) (local.get 0) (local.get 1)) (i32.const 256)))
  (func (export "exp") (param f64) (result f64) (call $vox_exp (local.get 0)))
  (func (export "ln") (param f64) (result f64) (call $vox_ln (local.get 0)))
  ;; @include voxhost.wat
)`

func loadHelpers(t *testing.T, wasm string) *helperModule {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = rt.Close(ctx) })
	_, err := rt.NewHostModuleBuilder("voxhost").
		NewFunctionBuilder().WithFunc(func(int32, int32, int32) {}).Export("log").
		NewFunctionBuilder().WithFunc(func(int32, int32, int32, int32) {}).Export("emit").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Instantiate(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	return &helperModule{mod: mod, fixed: mod.ExportedFunction("fixed"), scaled: mod.ExportedFunction("scaled"),
		exp: mod.ExportedFunction("exp"), ln: mod.ExportedFunction("ln"), at: mod.ExportedFunction("out")}
}

func (h *helperModule) text(t *testing.T, f api.Function, args ...uint64) string {
	t.Helper()
	n, err := f.Call(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	at, _ := h.at.Call(context.Background())
	b, _ := h.mod.Memory().Read(uint32(at[0]), uint32(n[0]))
	return string(b)
}

func (h *helperModule) float(t *testing.T, f api.Function, x float64) float64 {
	t.Helper()
	r, err := f.Call(context.Background(), api.EncodeF64(x))
	if err != nil {
		t.Fatal(err)
	}
	return api.DecodeF64(r[0])
}

// ulps is the distance of a from b in units in the last place.
func ulps(a, b float64) uint64 {
	key := func(x float64) int64 {
		if u := int64(math.Float64bits(x)); u >= 0 {
			return u
		} else {
			return math.MinInt64 - u
		}
	}
	d := key(a) - key(b)
	if d < 0 {
		d = -d
	}
	return uint64(d)
}

// TestSDKHelpersAgree: the C and WAT SDKs write fixed-point and scaled
// decimals exactly as the Go SDK does (and so as the Rust and AssemblyScript
// SDKs, whose own tests pin the same cases), and their logarithm and
// exponential are within the ulps their documentation states.
func TestSDKHelpersAgree(t *testing.T) {
	builds := map[string]func(t *testing.T) string{
		"c": func(t *testing.T) string {
			clang, err := exec.LookPath("clang-14")
			if err != nil {
				msg := "clang-14 not installed: run make toolchains"
				if os.Getenv(requiredEnv) == "1" {
					t.Fatal(msg)
				}
				t.Skip(msg)
			}
			dir := t.TempDir()
			src, wasm := filepath.Join(dir, "helpers.c"), filepath.Join(dir, "helpers.wasm")
			if err := os.WriteFile(src, []byte(cHelpers), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(clang, "--target=wasm32", "-nostdlib", "-O2", "-Wall", "-Wextra", "-Werror", "-I", "../sdk/c",
				"-Wl,--no-entry", "-Wl,--initial-memory=65536", "-Wl,--max-memory=65536", "-Wl,-z,stack-size=8192", "-o", wasm, src)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			return wasm
		},
		"wat": func(t *testing.T) string { return assembleWAT(t, []byte(watHelpers)) },
	}
	for _, lang := range []string{"c", "wat"} {
		t.Run(lang, func(t *testing.T) {
			h := loadHelpers(t, builds[lang](t))
			rng := rand.New(rand.NewPCG(1, 2))
			values := []float64{0, math.Copysign(0, -1), 0.125, -0.004, 2.5, -2.5, 1.005, -3.14159, 123456.789,
				math.NaN(), math.Inf(1), math.Inf(-1), 1e18, 9.99e17, -6.0206, 32767, -32768}
			for range 2000 {
				values = append(values, (rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(12)-4)))
			}
			for _, v := range values {
				for _, d := range []int{0, 1, 2, 3, 6, 9} {
					want := string(voxhost.AppendFixed(nil, v, d))
					if got := h.text(t, h.fixed, api.EncodeF64(v), uint64(d)); got != want {
						t.Errorf("fixed(%v, %d) = %s, want %s", v, d, got, want)
					}
				}
			}
			for _, v := range []int64{0, 1, -1, 5, -5, 1234, -1234, math.MaxInt64, math.MinInt64, 1e18, -999999} {
				for _, d := range []int{0, 1, 2, 3, 18} {
					want := string(voxhost.AppendScaled(nil, v, d))
					if got := h.text(t, h.scaled, uint64(v), uint64(d)); got != want {
						t.Errorf("scaled(%d, %d) = %s, want %s", v, d, got, want)
					}
				}
			}
			// Both SDKs' exp are fdlibm's, within 1 ulp of e^x, as Go's is:
			// within 2 of each other. WAT's ln is fdlibm's too, C's a series
			// within 2 ulps.
			maxExp, maxLn := uint64(2), uint64(3)
			var worstExp, worstLn uint64
			for range 20000 {
				x := (rng.Float64() - 0.5) * 200
				worstExp = max(worstExp, ulps(h.float(t, h.exp, x), math.Exp(x)))
				y := math.Exp((rng.Float64() - 0.5) * 1400)
				worstLn = max(worstLn, ulps(h.float(t, h.ln, y), math.Log(y)))
			}
			if worstExp > maxExp || worstLn > maxLn {
				t.Errorf("exp within %d ulps, ln within %d; want at most %d and %d", worstExp, worstLn, maxExp, maxLn)
			}
			t.Logf("exp within %d ulps, ln within %d of Go's math", worstExp, worstLn)
			for _, x := range []float64{0, 1, math.Inf(1)} {
				if got := h.float(t, h.ln, x); got != math.Log(x) {
					t.Errorf("ln(%v) = %v, want %v", x, got, math.Log(x))
				}
			}
			if got := h.float(t, h.ln, -1); !math.IsNaN(got) {
				t.Errorf("ln(-1) = %v, want NaN", got)
			}
		})
	}
}

// TestRustSDK runs the Rust SDK's own tests (cargo test in sdk/rust, on the
// build machine, where std is there to compare with): exp and ln within
// 1 ulp, powf and the dB conversions within what its README states, the
// fixed-point text, the config reader.
func TestRustSDK(t *testing.T) {
	cargo, err := exec.LookPath("/usr/bin/cargo")
	if err != nil {
		msg := "/usr/bin/cargo not installed: run make toolchains"
		if os.Getenv(requiredEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command(cargo, "test", "--offline", "--quiet")
	cmd.Dir = "../sdk/rust"
	cmd.Env = append(os.Environ(), "RUSTC=/usr/bin/rustc", "RUSTDOC=/usr/bin/rustdoc")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cargo test: %v\n%s", err, out)
	}
}
