package transport_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/transport"
)

// twilioStart is a start message with the given start members in place of
// the usual ones (the media format stays).
func twilioStart(streamSid, callSid, accountSid, tracks, params string) string {
	return fmt.Sprintf(`{"event":"start","sequenceNumber":"1","start":{"accountSid":%q,"streamSid":%q,"callSid":%q,"tracks":%s,`+
		`"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":%s},"streamSid":%q}`,
		accountSid, streamSid, callSid, tracks, params, streamSid)
}

// params renders n custom parameters p0..p(n-1), each with value v.
func params(n int, v string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":%q`, i, v)
	}
	return b.String() + "}"
}

// Every string of a start message the host keeps is bounded; at the bound
// it is kept, past it the call fails with a *ProtocolError marked Limit
// whose reason names the member.
func TestTwilioStartBounds(t *testing.T) {
	atMax := strings.Repeat("a", transport.MaxIDBytes)
	over := strings.Repeat("a", transport.MaxIDBytes+1)
	huge := strings.Repeat("9", 60000)
	value := strings.Repeat("v", transport.MaxParamValueBytes)
	key := strings.Repeat("k", transport.MaxParamKeyBytes)
	inbound := `["inbound"]`
	for _, tc := range []struct {
		name, msg string
		want      string // "" means accepted
	}{
		{"ids at the bound", twilioStart(atMax, atMax, atMax, `["inbound","outbound"]`, `{}`), ""},
		{"params at the bounds", twilioStart(streamSid, callSid, accountSid, inbound,
			strings.Replace(params(transport.MaxParams, value), `"p0"`, fmt.Sprintf("%q", key), 1)), ""},
		{"60 KB callSid", twilioStart(streamSid, huge, accountSid, inbound, `{}`),
			"twilio: start.callSid of 60000 bytes is longer than 64"},
		{"long streamSid", twilioStart(over, callSid, accountSid, inbound, `{}`),
			"twilio: start.streamSid of 65 bytes is longer than 64"},
		{"long accountSid", twilioStart(streamSid, callSid, over, inbound, `{}`),
			"twilio: start.accountSid of 65 bytes is longer than 64"},
		{"line break in callSid", twilioStart(streamSid, "CA1\ncall=forged", accountSid, inbound, `{}`),
			`twilio: start.callSid has '\n' at byte 3; ids are ASCII letters, digits and - _ . :`},
		{"non-ASCII streamSid", twilioStart("MZé", callSid, accountSid, inbound, `{}`),
			`twilio: start.streamSid has 'é' at byte 2; ids are ASCII letters, digits and - _ . :`},
		{"too many tracks", twilioStart(streamSid, callSid, accountSid, `["a","b","c","d","e"]`, `{}`),
			"twilio: start.tracks lists 5 tracks, more than 4"},
		{"long track", twilioStart(streamSid, callSid, accountSid, `["inbound","`+over+`"]`, `{}`),
			"twilio: start.tracks[1] of 65 bytes is longer than 64"},
		{"too many params", twilioStart(streamSid, callSid, accountSid, inbound, params(transport.MaxParams+1, "v")),
			"twilio: start.customParameters has 33 parameters, more than 32"},
		{"long param name", twilioStart(streamSid, callSid, accountSid, inbound, fmt.Sprintf(`{%q:"v"}`, key+"k")),
			`twilio: start.customParameters has a parameter name of 65 bytes, longer than 64: "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"...`},
		{"control character in param name", twilioStart(streamSid, callSid, accountSid, inbound, `{"a\u0000b":"v"}`),
			`twilio: start.customParameters has a parameter name with a control character: "a\x00b"`},
		{"long param value", twilioStart(streamSid, callSid, accountSid, inbound, fmt.Sprintf(`{"note":%q}`, value+"v")),
			`twilio: start.customParameters["note"] is 513 bytes, longer than 512`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := session(transport.Twilio())
			var in transport.Inbound
			err := s.Decode(transport.Text, []byte(tc.msg), &in)
			if tc.want == "" {
				if err != nil || in.Kind != transport.KindStart {
					t.Fatalf("decoded %v, %v; want the start accepted", in.Kind, err)
				}
				return
			}
			var perr *transport.ProtocolError
			if !errors.As(err, &perr) || !perr.Limit || perr.Unsupported || err.Error() != tc.want {
				t.Fatalf("error %v (%+v)\nwant  %s, marked Limit", err, perr, tc.want)
			}
			if in.Kind != transport.KindIgnore || in.Start != nil {
				t.Errorf("a refused start left %+v, want the zero Inbound", in)
			}
			// A refused start does not start the stream.
			if err := s.Decode(transport.Text, []byte(mediaMsg(2, 1, "inbound", tone(0, 160))), &in); err == nil {
				t.Error("media after a refused start was accepted")
			}
		})
	}
}

func TestMarkNameBound(t *testing.T) {
	atMax := strings.Repeat("m", transport.MaxMarkBytes)
	raw := func(name string) string { return fmt.Sprintf(`{"event":"mark","name":%q}`, name) }
	for _, tc := range []struct {
		proto   transport.Protocol
		session func() transport.Session
		msg     func(string) string
		want    string
	}{
		{transport.Twilio(), func() transport.Session { return started(t) }, func(n string) string { return markMsg(3, n) },
			"twilio: mark.name of 257 bytes is longer than 256"},
		{transport.Raw(), func() transport.Session { return session(transport.Raw()) }, raw,
			"raw: mark name of 257 bytes is longer than 256"},
	} {
		s := tc.session()
		var in transport.Inbound
		if err := s.Decode(transport.Text, []byte(tc.msg(atMax)), &in); err != nil || in.Kind != transport.KindMark || in.Mark != atMax {
			t.Errorf("%s: a %d-byte mark decoded to %v %d bytes, %v; want it kept", tc.proto.Name(), len(atMax), in.Kind, len(in.Mark), err)
		}
		err := s.Decode(transport.Text, []byte(tc.msg(atMax+"m")), &in)
		var perr *transport.ProtocolError
		if !errors.As(err, &perr) || !perr.Limit || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %s, marked Limit", tc.proto.Name(), err, tc.want)
		}
		if in.Kind != transport.KindIgnore || in.Mark != "" {
			t.Errorf("%s: a refused mark left %+v", tc.proto.Name(), in)
		}
	}
}

// Errors quote only the start of a value the client sent, so a 60 KB
// digit or encoding does not reach the logs whole.
func TestErrorsQuoteAnExcerpt(t *testing.T) {
	long := strings.Repeat("x", 60000)
	s := session(transport.Raw())
	var in transport.Inbound
	err := s.Decode(transport.Text, []byte(`{"event":"dtmf","digit":"`+long+`"}`), &in)
	if want := `raw: dtmf digit "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"... is not one of 0-9 * # A-D`; err == nil || err.Error() != want {
		t.Errorf("raw digit: %v\nwant %s", err, want)
	}
	err = started(t).Decode(transport.Text, []byte(dtmfMsg(3, long)), &in)
	if err == nil || len(err.Error()) > 100 {
		t.Errorf("twilio digit: %d-byte error %.100v", len(err.Error()), err)
	}
	err = session(transport.Twilio()).Decode(transport.Text, []byte(strings.Replace(startMsg, "audio/x-mulaw", long, 1)), &in)
	if err == nil || len(err.Error()) > 200 {
		t.Errorf("twilio encoding: %d-byte error %.200v", len(err.Error()), err)
	}
}

func TestCheckID(t *testing.T) {
	for _, ok := range []string{"", "CA6e7e6e17d4f4e1e5a2b0d3c9f1e2a3b4", "call-1_2.3:4", strings.Repeat("z", transport.MaxIDBytes)} {
		if err := transport.CheckID("call_id", ok); err != nil {
			t.Errorf("CheckID(%q): %v", ok, err)
		}
	}
	for id, want := range map[string]string{
		strings.Repeat("z", transport.MaxIDBytes+1): "call_id of 65 bytes is longer than 64",
		"a b":   `call_id has ' ' at byte 1; ids are ASCII letters, digits and - _ . :`,
		"x\x1b": `call_id has '\x1b' at byte 1; ids are ASCII letters, digits and - _ . :`,
	} {
		if err := transport.CheckID("call_id", id); err == nil || err.Error() != want {
			t.Errorf("CheckID(%q) = %v, want %s", id, err, want)
		}
	}
}
