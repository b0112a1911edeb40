package sip

import (
	"encoding/binary"

	"github.com/voxhost/voxhost/host/codec"
)

// frameMs is the packetisation the host answers (a=ptime:20) and the
// jitter buffer plays out at: one packet a tick.
const frameMs = 20

// frameSamples is one frame at 8 kHz; G.711 carries a sample a byte.
const frameSamples = 8 * frameMs

// maxPayload is the largest RTP payload the buffer keeps: 60 ms of
// G.711, past any packetisation a trunk sends when asked for 20 ms.
const maxPayload = 3 * frameSamples

// ringSize is how many packets the buffer can hold, a power of two well
// above the deepest it plays out at (1 s).
const ringSize = 64

// concealFrames is how many frames loss concealment fills with the last
// frame, fading, before it plays silence.
const concealFrames = 3

// played says what pop gave.
type played int

const (
	// playedNothing: no packet arrived yet, or the buffer is filling.
	playedNothing played = iota
	// playedAudio: the next packet, in order.
	playedAudio
	// playedConcealed: a frame made up for a lost or late packet.
	playedConcealed
	// playedSilence: the place of a telephone-event packet, which
	// carries no audio.
	playedSilence
)

type slot struct {
	seq   uint16
	full  bool
	event bool
	n     int
	data  [maxPayload]byte
}

// jitterStats are a buffer's counts since the call began.
type jitterStats struct {
	// Received counts the packets pushed; Duplicates, Late (arrived after
	// their turn, dropped) and Reordered (arrived after a later one, in
	// time) are among them.
	Received, Duplicates, Late, Reordered uint64
	// Lost counts the packets whose turn came and went without them;
	// Concealed the frames played instead of a missing packet (a lost
	// one, or one that is late), Drained the frames dropped to bring the
	// depth back to its target after a burst.
	Lost, Concealed, Drained uint64
	// DepthFrames sums the depth, in frames, at every packet played;
	// Played counts them, so their ratio is the mean depth.
	DepthFrames, Played uint64
	// Jitter is the RFC 3550 interarrival jitter, in samples.
	Jitter float64
}

// jitterBuffer reorders a call's RTP packets by sequence number and plays
// them out one a tick. Its depth adapts: a late packet raises the target
// by a frame, up to max; a quiet stretch lowers it again; a buffer deeper
// than its target drops frames to catch up. A missing packet is concealed
// with the last frame, fading, then silence. It is not safe for concurrent
// use: the media's lock guards it.
type jitterBuffer struct {
	format codec.Format
	slots  [ringSize]slot

	started bool
	// next is the sequence number to play; highest the highest received.
	next, highest uint16
	// target is the depth the buffer aims at, in frames, within 1..max.
	target, max int
	// filling counts the ticks spent filling before the first play.
	filling int
	// calm counts the ticks since a late packet; enough of them lower
	// the target.
	calm int

	last       [maxPayload]byte
	lastN      int
	concealRun int
	pcm        [2 * maxPayload]byte

	transit int64
	haveT   bool

	stats jitterStats
}

// calmTicks is how long the target stays up after a late packet: 10 s.
const calmTicks = 10000 / frameMs

func newJitterBuffer(f codec.Format, maxFrames int) *jitterBuffer {
	return &jitterBuffer{format: f, target: 1, max: max(1, maxFrames)}
}

// push stores a packet that arrived at arrival (in samples of the
// call's clock) with the RTP sequence number seq and timestamp ts. An
// event packet holds its place in the sequence without audio.
func (j *jitterBuffer) push(seq uint16, ts uint32, payload []byte, event bool, arrival int64) {
	j.stats.Received++
	if !event {
		j.observeJitter(ts, arrival)
	}
	if !j.started {
		j.started, j.next, j.highest = true, seq, seq
	}
	ahead := int16(seq - j.next)
	switch {
	case ahead < 0:
		j.stats.Late++
		j.raise()
		return
	case int(ahead) >= ringSize:
		// A jump past anything the buffer could hold: a new stream
		// (a re-INVITE, a restarted peer). Start over from it.
		j.reset(seq)
	}
	s := &j.slots[seq%ringSize]
	if s.full && s.seq == seq {
		j.stats.Duplicates++
		return
	}
	s.seq, s.full, s.event = seq, true, event
	s.n = copy(s.data[:], payload)
	if int16(seq-j.highest) < 0 {
		j.stats.Reordered++
	} else {
		j.highest = seq
	}
}

func (j *jitterBuffer) reset(seq uint16) {
	for i := range j.slots {
		j.slots[i].full = false
	}
	j.next, j.highest = seq, seq
}

// observeJitter updates the RFC 3550 interarrival jitter estimate.
func (j *jitterBuffer) observeJitter(ts uint32, arrival int64) {
	transit := arrival - int64(ts)
	if j.haveT {
		d := transit - j.transit
		if d < 0 {
			d = -d
		}
		j.stats.Jitter += (float64(d) - j.stats.Jitter) / 16
	}
	j.transit, j.haveT = transit, true
}

// raise lifts the target depth after a late packet.
func (j *jitterBuffer) raise() {
	j.calm = 0
	if j.target < j.max {
		j.target++
	}
}

// depth is how many frames lie between the next to play and the highest
// received, inclusive.
func (j *jitterBuffer) depth() int { return int(int16(j.highest-j.next)) + 1 }

// pop plays one tick's frame into dst (at least maxPayload bytes) and
// says what it played and how many bytes.
func (j *jitterBuffer) pop(dst []byte) (played, int) {
	if !j.started {
		return playedNothing, 0
	}
	if j.stats.Played == 0 && j.stats.Concealed == 0 && j.depth() < j.target && j.filling < j.target {
		j.filling++
		return playedNothing, 0
	}
	if j.calm++; j.calm >= calmTicks && j.target > 1 {
		j.target--
		j.calm = 0
	}
	for j.depth() > j.target+2 {
		// A burst left the buffer deeper than it needs: catch up.
		j.slots[j.next%ringSize].full = false
		j.next++
		j.stats.Drained++
	}
	if j.depth() <= 0 {
		// Nothing ahead: the packet is late, or the peer paused (silence
		// suppression). Play concealment in its place without giving up
		// on it; the depth grows by the frame, and so does the target, or
		// the next burst would drain what the wait bought.
		j.raise()
		return j.conceal(dst)
	}
	s := &j.slots[j.next%ringSize]
	j.next++
	if !s.full || s.seq != j.next-1 {
		j.stats.Lost++
		return j.conceal(dst)
	}
	s.full = false
	j.stats.DepthFrames += uint64(j.depth() + 1)
	j.stats.Played++
	if s.event {
		j.concealRun = concealFrames // after a tone, no replay of speech
		return playedSilence, j.silence(dst, frameSamples)
	}
	j.concealRun = 0
	j.lastN = copy(j.last[:], s.data[:s.n])
	return playedAudio, copy(dst, s.data[:s.n])
}

// conceal fills dst in place of a missing packet: the last frame at
// falling gain for concealFrames frames, silence after.
func (j *jitterBuffer) conceal(dst []byte) (played, int) {
	j.stats.Concealed++
	n := j.lastN
	if n == 0 {
		n = frameSamples
	}
	if j.concealRun >= concealFrames || j.lastN == 0 {
		j.concealRun++
		return playedConcealed, j.silence(dst, n)
	}
	j.concealRun++
	shift := uint(j.concealRun - 1) // gain 1, 1/2, 1/4
	m := j.format.Decode(j.pcm[:], j.last[:n])
	for i := 0; i+1 < m; i += 2 {
		v := int16(binary.LittleEndian.Uint16(j.pcm[i:]))
		binary.LittleEndian.PutUint16(j.pcm[i:], uint16(v>>shift))
	}
	return playedConcealed, j.format.Encode(dst, j.pcm[:m])
}

func (j *jitterBuffer) silence(dst []byte, n int) int {
	b := j.format.Silence()
	for i := range dst[:n] {
		dst[i] = b
	}
	return n
}
