//go:build linux

package plugin

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/voxhost/voxhost/plugins"
)

// stockPageBounds is how many 4 KiB OS pages of its linear memory each stock
// plugin may make resident in 200 frames of 20 ms at each rate: its data,
// stack, state and the head of its frame buffer (the host writes each frame
// there). Only touched pages cost memory (memory_unix.go maps linear memory
// anonymously), so with four plugins a call these are most of a call's
// guest memory. The layouts that keep them low: vad's stack first and frame
// buffer last (plugins/vad/Makefile), dtmf's 4 KiB stack and the Rust SDK's
// state before the buffer (plugins/dtmf/build.rs, sdk/rust), and the
// AssemblyScript SDK's buffer and scratches from the heap, after all static
// data (sdk/assemblyscript/assembly/buffer.ts). dtmf's stack fills page 0,
// agc's ring of 1 ms levels (2000 bytes at the default window_ms) is what
// pushes its buffer onto a second page.
var stockPageBounds = map[string]map[int]int{
	"passthrough": {8000: 1, 16000: 1, 24000: 1},
	"gain":        {8000: 1, 16000: 1, 24000: 1},
	"vad":         {8000: 1, 16000: 1, 24000: 1},
	"dtmf":        {8000: 2, 16000: 2, 24000: 2},
	"gate":        {8000: 1, 16000: 1, 24000: 1},
	"agc":         {8000: 2, 16000: 2, 24000: 2},
}

// TestStockPluginsTouchFewPages runs each stock plugin on 200 frames of
// varied audio (silence, noise, tones, DTMF digits, bursts) and counts the
// resident pages of its linear memory with mincore.
func TestStockPluginsTouchFewPages(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Skipf("the bounds are in 4 KiB pages; this system's pages are %d bytes", os.Getpagesize())
	}
	ctx := context.Background()
	rt, err := NewRuntime(ctx, Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	for _, name := range []string{"vad", "dtmf", "gate", "agc", "gain", "passthrough"} {
		wasm, ok := plugins.Get(name)
		if !ok {
			t.Fatalf("no stock plugin %s", name)
		}
		p, err := rt.Load(ctx, name+".wasm", wasm)
		if err != nil {
			t.Fatal(err)
		}
		for _, rate := range []int{8000, 16000, 24000} {
			t.Run(fmt.Sprintf("%s/%d", name, rate), func(t *testing.T) {
				in, err := p.Instantiate(ctx, InstanceConfig{InputRate: rate})
				if err != nil {
					t.Fatal(err)
				}
				defer in.Close(ctx)
				n := rate / 50
				for frame := 0; frame < 200; frame++ {
					fillFrame(in.Buffer()[:2*n], frame, rate)
					if _, err := in.Process(n); err != nil {
						t.Fatal(err)
					}
				}
				pages, err := residentPages(t, in)
				if err != nil {
					t.Skipf("mincore is not available here: %v", err)
				}
				bound := stockPageBounds[name][rate]
				t.Logf("%s at %d Hz touches %d pages of 4 KiB: %v (bound %d)", name, rate, len(pages), pages, bound)
				if len(pages) > bound {
					t.Errorf("%s at %d Hz touches %d pages of its linear memory %v, more than its bound of %d", name, rate, len(pages), pages, bound)
				}
			})
		}
	}
}

// fillFrame writes frame number frame of the test audio as PCM16LE: each
// quarter second is another kind of sound, so the plugins' detectors open,
// close and emit (vad's speech, dtmf's digits, gate's and agc's levels).
func fillFrame(buf []byte, frame, rate int) {
	n := len(buf) / 2
	seed := uint32(frame*7919 + 1)
	for i := 0; i < n; i++ {
		t := float64(frame*n+i) / float64(rate)
		seed = seed*1664525 + 1013904223
		noise := float64(int32(seed)>>16) / 32768
		var v float64
		switch (frame / 12) % 6 {
		case 0: // quiet noise
			v = 300 * noise
		case 1: // a DTMF "5": 770 + 1336 Hz
			v = 8000*math.Sin(2*math.Pi*770*t) + 8000*math.Sin(2*math.Pi*1336*t)
		case 2: // silence
		case 3: // a voiced, speech-like burst: 150 Hz and harmonics, syllables
			env := 0.5 + 0.5*math.Sin(2*math.Pi*4*t)
			v = env * (9000*math.Sin(2*math.Pi*150*t) + 4000*math.Sin(2*math.Pi*450*t) + 2000*math.Sin(2*math.Pi*1200*t) + 1500*noise)
		case 4: // a DTMF "#": 941 + 1477 Hz, quieter
			v = 3000*math.Sin(2*math.Pi*941*t) + 3000*math.Sin(2*math.Pi*1477*t)
		case 5: // loud noise
			v = 12000 * noise
		}
		binary.LittleEndian.PutUint16(buf[2*i:], uint16(int16(max(-32768, min(32767, math.Round(v))))))
	}
}

// residentPages lists the 4 KiB pages of in's linear memory that are resident.
func residentPages(t *testing.T, in *Instance) ([]int, error) {
	mem, ok := in.mem.Read(0, in.mem.Size())
	if !ok || len(mem) == 0 {
		t.Fatal("cannot read the instance's memory")
	}
	const page = 4096
	if uintptr(unsafe.Pointer(&mem[0]))%page != 0 {
		t.Skip("linear memory is not page-aligned: it is not the mmap of memory_unix.go")
	}
	vec := make([]byte, (len(mem)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return nil, errno
	}
	var pages []int
	for i, v := range vec {
		if v&1 != 0 {
			pages = append(pages, i)
		}
	}
	return pages, nil
}
