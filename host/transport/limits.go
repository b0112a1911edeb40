package transport

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on the strings a client sends that the host keeps. A stream's ids
// go into every log line of the call and into every message sent back, its
// custom parameters into the call_start metadata every plugin is handed, a
// mark name back onto the wire. Unbounded, a single start message with a
// 60 KB callSid would be the call id of every log line. A value past a
// bound fails the call instead of being cut: a cut id or parameter would be
// silently wrong, a refused one is a bug the client can see and fix.
const (
	// MaxIDBytes bounds a stream, call or account id, a track name and the
	// call_id query parameter. Twilio's sids are 34 characters: two
	// letters and 32 hex digits.
	MaxIDBytes = 64
	// MaxTracks bounds the tracks a start message lists; Twilio sends
	// "inbound", or "inbound" and "outbound".
	MaxTracks = 4
	// MaxParams bounds the custom parameters of a stream.
	MaxParams = 32
	// MaxParamKeyBytes bounds a custom parameter's name.
	MaxParamKeyBytes = 64
	// MaxParamValueBytes bounds a custom parameter's value, and a pipeline
	// name however a client asks for it (customParameters.pipeline or the
	// pipeline query parameter). With MaxParams it keeps the call_start
	// metadata within about 18 KiB.
	MaxParamValueBytes = 512
	// MaxMarkBytes bounds a mark name, which is sent back to the client.
	MaxMarkBytes = 256
)

// CheckID says why id cannot be kept as a call, stream or account id or a
// track name, or returns nil: it is longer than MaxIDBytes, or has a
// character other than an ASCII letter, a digit or one of "-_.:", which
// would need quoting in logs and could forge a log line. What names the
// value in the error, e.g. "start.callSid" or "call_id". The empty id is
// valid here; whether one is required is the caller's rule.
func CheckID(what, id string) error {
	if len(id) > MaxIDBytes {
		return fmt.Errorf("%s of %d bytes is longer than %d", what, len(id), MaxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !idChar(c) {
			r, _ := utf8.DecodeRuneInString(id[i:])
			return fmt.Errorf("%s has %s at byte %d; ids are ASCII letters, digits and - _ . :", what, strconv.QuoteRune(r), i)
		}
	}
	return nil
}

func idChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
}

// CheckPipelineName says why name, as a client asks for a pipeline, is
// refused before it is looked up and echoed in the refusal, or returns nil.
func CheckPipelineName(what, name string) error {
	if len(name) > MaxParamValueBytes {
		return fmt.Errorf("%s of %d bytes is longer than %d", what, len(name), MaxParamValueBytes)
	}
	return nil
}

// CheckParams enforces MaxParams, MaxParamKeyBytes and MaxParamValueBytes
// on the custom parameters of a stream.
// A name may be any text but not hold control characters, which logs and
// messages would have to escape.
func CheckParams(what string, params map[string]string) error {
	if len(params) > MaxParams {
		return fmt.Errorf("%s has %d parameters, more than %d", what, len(params), MaxParams)
	}
	// In name order, so that of several bad parameters the error names
	// the same one every time.
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		switch {
		case len(k) > MaxParamKeyBytes:
			return fmt.Errorf("%s has a parameter name of %d bytes, longer than %d: %s", what, len(k), MaxParamKeyBytes, excerpt(k))
		case strings.IndexFunc(k, unicode.IsControl) >= 0:
			return fmt.Errorf("%s has a parameter name with a control character: %s", what, excerpt(k))
		case len(v) > MaxParamValueBytes:
			return fmt.Errorf("%s[%s] is %d bytes, longer than %d", what, excerpt(k), len(v), MaxParamValueBytes)
		}
	}
	if p, ok := params["pipeline"]; ok {
		return CheckPipelineName(what+".pipeline", p)
	}
	return nil
}

// CheckMark enforces MaxMarkBytes on a mark name.
func CheckMark(what, name string) error {
	if len(name) > MaxMarkBytes {
		return fmt.Errorf("%s of %d bytes is longer than %d", what, len(name), MaxMarkBytes)
	}
	return nil
}

// excerptBytes is how much of a refused value an error quotes.
const excerptBytes = 32

// excerpt quotes the start of a client's value for an error message, so
// that the message says which value is wrong without carrying all of it
// into logs and close reasons.
func excerpt(s string) string {
	if len(s) <= excerptBytes {
		return strconv.Quote(s)
	}
	cut := excerptBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// limitError turns a bound's error into the protocol's: a well-formed
// message the host refuses to keep, a policy violation.
func limitError(protocol string, err error) *ProtocolError {
	return &ProtocolError{Protocol: protocol, Reason: err.Error(), Limit: true}
}
