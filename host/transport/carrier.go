package transport

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// What the JSON carriers share beyond the skeleton of jsoncarrier.go: the
// readers of their rare messages (start, dtmf, mark), which may allocate
// and use encoding/json, and their conventions for ids and parameters.

// appendCount appends n as a JSON string, as these carriers send their
// counters.
func appendCount(dst []byte, n int64) []byte {
	dst = append(dst, '"')
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '"')
}

// decodeMessage reads msg, a JSON message of protocol named what (e.g.
// "start"), into v with encoding/json: the rare messages, which may
// allocate.
func decodeMessage(protocol, what string, msg []byte, v any) error {
	if err := json.Unmarshal(msg, v); err != nil {
		return protocolErrorf(protocol, "bad %s message: %v", what, err)
	}
	return nil
}

// decodeCarrierDTMF reads the dtmf.digit of a dtmf message of protocol:
// Twilio's shape, which Telnyx, Plivo and Exotel keep.
func decodeCarrierDTMF(protocol string, msg []byte, in *Inbound) error {
	var m struct {
		DTMF *struct {
			Digit string `json:"digit"`
		} `json:"dtmf"`
	}
	if err := decodeMessage(protocol, "dtmf", msg, &m); err != nil {
		return err
	}
	if m.DTMF == nil {
		return protocolErrorf(protocol, "dtmf message without a dtmf object")
	}
	if d := m.DTMF.Digit; len(d) != 1 || !validDigit(d[0]) {
		return protocolErrorf(protocol, "dtmf.digit %s is not one of 0-9 * # A-D", excerpt(d))
	}
	in.Kind, in.Digit = KindDTMF, m.DTMF.Digit[0]
	return nil
}

// decodeCarrierMark reads the mark.name of a mark message of protocol:
// Twilio's shape, which Telnyx and Exotel keep.
func decodeCarrierMark(protocol string, msg []byte, in *Inbound) error {
	var m struct {
		Mark *struct {
			Name string `json:"name"`
		} `json:"mark"`
	}
	if err := decodeMessage(protocol, "mark", msg, &m); err != nil {
		return err
	}
	if m.Mark == nil {
		return protocolErrorf(protocol, "mark message without a mark object")
	}
	return markInbound(protocol, "mark.name", m.Mark.Name, in)
}

// decodeNamed reads the top-level name of a mark message of event, Plivo's
// playedStream or checkpoint, as a KindMark.
func decodeNamed(protocol, event string, msg []byte, in *Inbound) error {
	var m struct {
		Name *string `json:"name"`
	}
	if err := decodeMessage(protocol, event, msg, &m); err != nil {
		return err
	}
	if m.Name == nil {
		return protocolErrorf(protocol, "%s message without a string name", event)
	}
	return markInbound(protocol, "name", *m.Name, in)
}

// markInbound makes in the KindMark of name, within MaxMarkBytes.
func markInbound(protocol, what, name string, in *Inbound) error {
	if err := CheckMark(what, name); err != nil {
		return limitError(protocol, err)
	}
	in.Kind, in.Mark = KindMark, name
	return nil
}

// appendMarkMember appends the mark member of Twilio's mark message,
// which Telnyx and Exotel keep, and closes the message:
// `,"mark":{"name":N}}`.
func appendMarkMember(dst []byte, name string) []byte {
	dst = append(dst, `,"mark":{"name":`...)
	dst = appendQuoted(dst, name)
	return append(dst, "}}"...)
}

// jsonInt is an integer a carrier writes as a JSON number or as a string
// of digits (Exotel's "8000", Plivo's 8000).
type jsonInt struct {
	set bool
	n   int
}

// UnmarshalJSON reads a number or a string of one.
func (j *jsonInt) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%s is not an integer", excerpt(s))
	}
	j.set, j.n = true, n
	return nil
}

// or returns the integer, or def when the member was absent.
func (j jsonInt) or(def int) int {
	if !j.set {
		return def
	}
	return j.n
}

// mediaType splits a content type such as "audio/x-mulaw;rate=8000" into
// its type, lower case, and its rate parameter (0 without one).
func mediaType(s string) (string, int) {
	typ, params, _ := strings.Cut(s, ";")
	rate := 0
	for _, p := range strings.Split(params, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "rate") {
			rate, _ = strconv.Atoi(v)
		}
	}
	return strings.ToLower(strings.TrimSpace(typ)), rate
}

// unsupportedFormat is a start message's refusal of its audio format.
func unsupportedFormat(protocol, format string, args ...any) *ProtocolError {
	err := protocolErrorf(protocol, format, args...)
	err.Unsupported = true
	return err
}

// withFromTo returns params with the call's from and to numbers added as
// "from" and "to", which the host passes on to plugins and bots as it
// does custom parameters; a custom parameter of the same name wins. The
// result is a fresh map when anything is added.
func withFromTo(params map[string]string, from, to string) map[string]string {
	if from == "" && to == "" {
		return params
	}
	out := make(map[string]string, len(params)+2)
	for _, kv := range [][2]string{{"from", from}, {"to", to}} {
		if kv[1] != "" {
			out[kv[0]] = kv[1]
		}
	}
	for k, v := range params {
		out[k] = v
	}
	return out
}

// splitFromTo is withFromTo undone for a client role: the "from" and "to"
// parameters, and the others.
func splitFromTo(params map[string]string) (from, to string, rest map[string]string) {
	from, to = params["from"], params["to"]
	if from == "" && to == "" {
		return "", "", params
	}
	rest = make(map[string]string, len(params))
	for k, v := range params {
		if k != "from" && k != "to" {
			rest[k] = v
		}
	}
	return from, to, rest
}

// checkCarrierStart applies the bounds of limits.go to the ids, tracks and
// parameters the host keeps of a start message; ids names each id as the
// carrier spells it.
func checkCarrierStart(protocol string, params map[string]string, paramsWhat string, tracks []string, ids ...[2]string) error {
	for _, id := range ids {
		if err := CheckID(id[0], id[1]); err != nil {
			return limitError(protocol, err)
		}
	}
	if len(tracks) > MaxTracks {
		return limitError(protocol, fmt.Errorf("start.tracks lists %d tracks, more than %d", len(tracks), MaxTracks))
	}
	for i, tr := range tracks {
		if err := CheckID("start.tracks["+strconv.Itoa(i)+"]", tr); err != nil {
			return limitError(protocol, err)
		}
	}
	if err := CheckParams(paramsWhat, params); err != nil {
		return limitError(protocol, err)
	}
	return nil
}

// rawParams reads custom parameters a carrier sends as a JSON object of
// strings or as a string of pairs split by sep (parseQueryParams); null or
// absent is none.
func rawParams(raw json.RawMessage, sep string) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return parseQueryParams(s, sep)
	}
	var m map[string]string
	err := json.Unmarshal(raw, &m)
	return m, err
}

// parseQueryParams reads custom parameters a carrier passes as one string
// of key=value pairs (Plivo's extra_headers, Exotel's custom_parameters
// when it is not an object): a JSON object of strings, or pairs split by
// sep, with %-escapes resolved where they are well formed.
func parseQueryParams(s string, sep string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if s[0] == '{' {
		var m map[string]string
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			return nil, err
		}
		return m, nil
	}
	m := map[string]string{}
	for _, kv := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(sep, r) }) {
		k, v, _ := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		if k != "" {
			m[k] = v
		}
	}
	return m, nil
}

// MarkDropper is implemented by a Protocol whose clear discards the marks
// queued behind the audio it drops instead of returning them, as Plivo's
// clearAudio does with pending checkpoints (no playedStream follows), where
// Twilio's and Telnyx's clear send the queued marks back. The host must
// then take every mark it sent such a caller and has not had back as
// cleared when it sends the clear, or a relayed bot waits for them for
// the rest of the call; one that comes back after all is ignored.
type MarkDropper interface {
	// ClearDropsMarks reports whether the clear discards queued marks.
	ClearDropsMarks() bool
}
