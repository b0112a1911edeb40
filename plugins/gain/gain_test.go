package gain_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// want is the documented result, computed in 64 bits as the scalar form of
// the plugin did before its loop went into SIMD lanes.
func want(x int16, db float64) int16 {
	g := int64(math.Pow(10, db/20)*65536 + 0.5)
	v := (int64(x)*g + 32768) >> 16
	return int16(max(-32768, min(32767, v)))
}

// TestEveryInput: every 16-bit input, at gains that cut, keep, boost and
// clip, comes out as round(x g / 65536) saturated, bit for bit, including
// frames whose length is not a multiple of the eight SIMD lanes.
func TestEveryInput(t *testing.T) {
	c := hosttest.Catalog(t)
	in := make([]byte, 2*65536)
	for i := range 65536 {
		binary.LittleEndian.PutUint16(in[2*i:], uint16(i))
	}
	for _, db := range []float64{-96, -20.5, -6, 0, 0.1, 6, 20, 47.9, 48} {
		p := hosttest.MustStage(t, c, "gain", fmt.Sprintf("db=%g", db))
		for _, frame := range []int{320, 13 * 2} {
			out := hosttest.Process(t, p, in, frame)
			if len(out) != len(in) {
				t.Fatalf("db=%g: %d bytes out for %d in", db, len(out), len(in))
			}
			for i := range 65536 {
				x := int16(uint16(i))
				if got := int16(binary.LittleEndian.Uint16(out[2*i:])); got != want(x, db) {
					t.Fatalf("db=%g, frames of %d bytes: %d -> %d, want %d", db, frame, x, got, want(x, db))
				}
			}
		}
	}
}

// TestBadConfig: a db that is not a number or lies outside -96..48 is refused.
func TestBadConfig(t *testing.T) {
	c := hosttest.Catalog(t)
	for _, cfg := range []string{"db=-97", "db=49", `db="loud"`} {
		if p, err := hosttest.Instantiate(c, "gain "+cfg, pipeline.CallConfig{}); err == nil {
			p.Close(t.Context())
			t.Errorf("gain %s: accepted", cfg)
		}
	}
}
