package plugin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DropReason is why the host dropped an emit. ABI.md §4: a bad emit is
// dropped and counted, never a trap, so the count (and the one log line
// per reason) is all that tells an author the event never arrived.
type DropReason int

// The reasons, in the order the host checks them.
const (
	// DropRateLimited: over MaxHostCallsPerCall log and emit calls in one
	// call into the plugin.
	DropRateLimited DropReason = iota
	// DropBadName: a name of 0 or more than abi.MaxEmitNameLen bytes, or
	// with a byte outside [a-z0-9_.-].
	DropBadName
	// DropOversizeData: data longer than abi.MaxEmitDataLen bytes.
	DropOversizeData
	// DropOutOfBounds: the name or the data lies outside the plugin's memory.
	DropOutOfBounds
	// DropInvalidData: data that is not one JSON value in UTF-8.
	DropInvalidData
	// NumDropReasons is the number of reasons; EmitDrops has one count each.
	NumDropReasons
)

// String is the reason as metric labels and JSON keys spell it.
func (r DropReason) String() string {
	switch r {
	case DropRateLimited:
		return "rate_limited"
	case DropBadName:
		return "bad_name"
	case DropOversizeData:
		return "oversize_data"
	case DropOutOfBounds:
		return "out_of_bounds"
	case DropInvalidData:
		return "invalid_data"
	}
	return "unknown"
}

// Text is the reason as a person reads it in a summary line.
func (r DropReason) Text() string { return strings.ReplaceAll(r.String(), "_", " ") }

// EmitDrops counts dropped emits, indexed by DropReason.
type EmitDrops [NumDropReasons]uint64

// Total is the number of emits dropped, for every reason.
func (d EmitDrops) Total() uint64 {
	var n uint64
	for _, c := range d {
		n += c
	}
	return n
}

// Add counts o's drops into d, to sum a pipeline's stages.
func (d *EmitDrops) Add(o EmitDrops) {
	for i, c := range o {
		d[i] += c
	}
}

// String lists the non-zero counts, most first: "2 invalid data, 1 bad
// name"; "" when nothing was dropped.
func (d EmitDrops) String() string {
	var reasons []DropReason
	for r := DropReason(0); r < NumDropReasons; r++ {
		if d[r] > 0 {
			reasons = append(reasons, r)
		}
	}
	sort.SliceStable(reasons, func(i, j int) bool { return d[reasons[i]] > d[reasons[j]] })
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = strconv.FormatUint(d[r], 10) + " " + r.Text()
	}
	return strings.Join(parts, ", ")
}

// MarshalJSON writes every reason as a key, zeros included, so that the
// JSON of `voxhost plugin test --json` has a fixed shape.
func (d EmitDrops) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for r := DropReason(0); r < NumDropReasons; r++ {
		if r > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, r.String())
		b = append(b, ':')
		b = strconv.AppendUint(b, d[r], 10)
	}
	return append(b, '}'), nil
}

// DroppedEmits counts the emits the host dropped, by reason, over the
// instance's life. It stays readable after Close, so a call's totals can
// be read once its plugins have heard call_end.
func (in *Instance) DroppedEmits() EmitDrops {
	var d EmitDrops
	for i := range d {
		d[i] = in.emitDrops[i].Load()
	}
	return d
}

// FirstDroppedEmits describes the first emit dropped for each reason ("" for
// none): what the plugin passed and why it was refused, as the warning
// logged for it says.
func (in *Instance) FirstDroppedEmits() [NumDropReasons]string { return in.firstDrops }

// dropEmit counts a dropped emit and logs the first of each reason: one
// line per reason per instance however often the plugin repeats the
// mistake, so a plugin that emits badly on every frame cannot flood the
// log. describe is called only then, so the frame path builds no message.
func (in *Instance) dropEmit(r DropReason, describe func() string) {
	if r != DropRateLimited { // admit counted those
		in.droppedHostCalls.Add(1)
	}
	if in.emitDrops[r].Add(1) != 1 {
		return
	}
	detail := describe()
	in.firstDrops[r] = detail
	in.logger.Warn("emit dropped ("+r.Text()+"): "+detail+"; further drops for this reason are only counted",
		"plugin", in.plugin.name, "reason", r.String(), "frame", in.frame)
}

// badNameByte is the index of the first byte of an emitted name that
// [a-z0-9_.-] does not allow, or -1.
func badNameByte(name []byte) int {
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return i
		}
	}
	return -1
}

// validData says whether emitted data is what ABI.md §4 allows: one JSON
// value, in UTF-8 (encoding/json's Valid alone lets invalid UTF-8 inside
// strings through).
func validData(data []byte) bool { return utf8.Valid(data) && json.Valid(data) }

// whyInvalidData explains why validData refused data.
func whyInvalidData(name, data []byte) string {
	why := "not UTF-8"
	if utf8.Valid(data) {
		why = "not one JSON value"
		if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
			why += " (" + err.Error() + ")"
		}
	}
	return fmt.Sprintf("%q with %d bytes of data %s: %s", name, len(data), excerpt(data), why)
}

// excerpt quotes the start of b for a message.
func excerpt(b []byte) string {
	const most = 64
	if len(b) > most {
		return strconv.Quote(string(b[:most])) + "…"
	}
	return strconv.Quote(string(b))
}
