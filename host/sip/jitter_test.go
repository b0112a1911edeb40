package sip

import (
	"bytes"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
)

// frameOf is a recognisable μ-law frame for packet i.
func frameOf(i int) []byte {
	f := make([]byte, frameSamples)
	for k := range f {
		f[k] = byte(0x10 + i%0x60) // loud enough that a fade changes it
	}
	return f
}

// feed pushes packets by sequence offset in the order given, one a tick,
// popping once a tick, and returns what was played each tick.
func run(t *testing.T, j *jitterBuffer, arrivals [][]int, ticks int) ([]played, [][]byte) {
	t.Helper()
	const seq0, ts0 = 65530, 1000 // wraps: sequence arithmetic is modular
	var kinds []played
	var frames [][]byte
	dst := make([]byte, maxPayload)
	for tick := range ticks {
		if tick < len(arrivals) {
			for _, i := range arrivals[tick] {
				arrival := int64(tick * frameSamples)
				j.push(uint16(seq0+i), uint32(ts0+i*frameSamples), frameOf(i), false, arrival)
			}
		}
		k, n := j.pop(dst)
		kinds = append(kinds, k)
		frames = append(frames, append([]byte(nil), dst[:n]...))
	}
	return kinds, frames
}

// TestJitterBufferInOrder plays packets that arrive on time, in order,
// at the least depth: one frame.
func TestJitterBufferInOrder(t *testing.T) {
	j := newJitterBuffer(codec.Telephony, 5)
	var arr [][]int
	for i := range 50 {
		arr = append(arr, []int{i})
	}
	kinds, frames := run(t, j, arr, 50)
	for i, k := range kinds {
		if k != playedAudio || !bytes.Equal(frames[i], frameOf(i)) {
			t.Fatalf("tick %d played %v, want packet %d", i, k, i)
		}
	}
	if st := j.stats; st.Lost+st.Late+st.Concealed+st.Reordered+st.Drained != 0 {
		t.Fatalf("stats %+v for a clean stream", st)
	}
	if mean := float64(j.stats.DepthFrames) / float64(j.stats.Played); mean != 1 {
		t.Fatalf("mean depth %.2f frames, want 1 (20 ms) on a clean stream", mean)
	}
}

// TestJitterBufferReorders swaps pairs of packets within the buffer's
// depth: after the first late packet raises the target, every packet
// plays in sequence order and none is concealed past the first.
func TestJitterBufferReorders(t *testing.T) {
	j := newJitterBuffer(codec.Telephony, 5)
	// Tick 0: packet 0. Then packets arrive two at a time, swapped, every
	// other tick: 2 1, -, 4 3, -, ...
	arr := [][]int{{0}, {}}
	for i := 1; i+1 < 60; i += 2 {
		arr = append(arr, []int{i + 1, i}, []int{})
	}
	kinds, frames := run(t, j, arr, len(arr)+4)
	var order []int
	for i, k := range kinds {
		if k == playedAudio {
			for p := range 60 {
				if bytes.Equal(frames[i], frameOf(p)) {
					order = append(order, p)
					break
				}
			}
		}
	}
	for i, p := range order {
		if p != i {
			t.Fatalf("played %v, not in sequence order", order)
		}
	}
	if len(order) < 58 {
		t.Fatalf("played %d of 59 packets: %v (stats %+v)", len(order), order, j.stats)
	}
	if j.stats.Reordered == 0 {
		t.Fatal("no reordering counted")
	}
	t.Logf("reordered pairs: %d played in order, stats %+v, mean depth %.1f frames", len(order), j.stats,
		float64(j.stats.DepthFrames)/float64(j.stats.Played))
}

// TestJitterBufferConcealsLoss drops every tenth packet: each is counted
// lost and played as the previous frame, not as silence; the stream goes
// on in order.
func TestJitterBufferConcealsLoss(t *testing.T) {
	j := newJitterBuffer(codec.Telephony, 5)
	var arr [][]int
	for i := range 100 {
		if i%10 == 5 {
			arr = append(arr, []int{})
			continue
		}
		arr = append(arr, []int{i})
	}
	kinds, frames := run(t, j, arr, 101)
	if j.stats.Lost != 0 && j.stats.Lost != 10 {
		t.Fatalf("lost %d, want 10 or, had they all come late, 0", j.stats.Lost)
	}
	concealed := 0
	for i, k := range kinds {
		if k != playedConcealed {
			continue
		}
		concealed++
		if i > 0 && bytes.Equal(frames[i], bytes.Repeat([]byte{0xFF}, frameSamples)) {
			t.Fatalf("tick %d concealed a single loss with silence, not the last frame", i)
		}
	}
	if concealed < 10 || uint64(concealed) != j.stats.Concealed {
		t.Fatalf("%d frames concealed (stats say %d), want at least the 10 lost", concealed, j.stats.Concealed)
	}
}

// TestJitterBufferLateAndFade: a packet that arrives after its turn was
// concealed is dropped and counted late, and raises the target depth; a
// long gap fades the last frame to silence.
func TestJitterBufferLateAndFade(t *testing.T) {
	j := newJitterBuffer(codec.Telephony, 5)
	dst := make([]byte, maxPayload)
	j.push(0, 0, frameOf(0), false, 0)
	j.pop(dst)
	j.push(2, 2*frameSamples, frameOf(2), false, frameSamples) // 1 is missing
	j.pop(dst)                                                 // conceals 1
	j.pop(dst)                                                 // plays 2
	j.push(1, frameSamples, frameOf(1), false, 3*frameSamples) // too late
	if j.stats.Late != 1 || j.stats.Lost != 1 {
		t.Fatalf("late %d lost %d, want 1 and 1", j.stats.Late, j.stats.Lost)
	}
	if j.target < 2 {
		t.Fatalf("target %d after a late packet, want it raised", j.target)
	}
	// Nothing more arrives: the last frame fades, then silence.
	var levels []int
	for range concealFrames + 2 {
		_, n := j.pop(dst)
		pcm := make([]byte, 2*n)
		codec.DecodeUlaw(pcm, dst[:n])
		levels = append(levels, int(int16(uint16(pcm[0])|uint16(pcm[1])<<8)))
	}
	for i := 1; i < len(levels); i++ {
		if abs(levels[i]) > abs(levels[i-1]) {
			t.Fatalf("concealment levels %v do not fall", levels)
		}
	}
	if levels[len(levels)-1] != 0 && abs(levels[len(levels)-1]) > 8 {
		t.Fatalf("concealment ends at %d, not silence", levels[len(levels)-1])
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// TestJitterBufferDrainsBurst: a burst that leaves the buffer deeper than
// its target is caught up by dropping frames, counted, so that the delay
// it adds stays bounded.
func TestJitterBufferDrainsBurst(t *testing.T) {
	j := newJitterBuffer(codec.Telephony, 5)
	burst := []int{}
	for i := range 20 {
		burst = append(burst, i)
	}
	run(t, j, [][]int{burst}, 3)
	if j.stats.Drained == 0 {
		t.Fatalf("a 20-packet burst was not drained: %+v", j.stats)
	}
	if d := j.depth(); d > j.target+2 {
		t.Fatalf("depth %d frames past target %d + 2 after draining", d, j.target)
	}
}

// TestJitterBufferAllocatesNothing: the frame path (push and pop) is
// the call's hot path.
func TestJitterBufferAllocatesNothing(t *testing.T) {
	j := newJitterBuffer(codec.Telephony, 5)
	dst := make([]byte, maxPayload)
	f := frameOf(1)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		j.push(uint16(i), uint32(i*frameSamples), f, false, int64(i*frameSamples))
		j.pop(dst)
		i++
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a frame", allocs)
	}
}
