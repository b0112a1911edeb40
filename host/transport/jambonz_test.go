package transport_test

import (
	"bytes"
	"testing"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// jambonz's listen verb, as docs.jambonz.org/verbs/verbs/listen (source:
// jambonz/next-static-site markdown/docs/webhooks/listen.md) has it:
//
//	"one text frame is sent immediately after the websocket connection is
//	established. This text frame contains a JSON string with all of the
//	call attributes normally sent on an HTTP request (e.g. callSid, etc),
//	plus sampleRate and mixType properties"
//
// The attributes are jambonz-feature-server's (lib/session/call-info.js
// toJSON, lib/tasks/listen.js: Object.assign({sampleRate, mixType},
// callInfo, metadata)); customerData and headers are objects.
const jambonzMetadata = `{"sampleRate":16000,"mixType":"mono","callSid":"b7a8c2e4-4f2a-4d9e-9c1b-6f0e2d3a1b5c",
"direction":"inbound","from":"+15083084809","to":"+15083728299","callId":"a84b4c76e66710@pc33.atlanta.com",
"sbcCallid":"2ea5e1d2-8b34-4cfa-9c7b-3e4d5f6a7b8c","sipStatus":200,"sipReason":"OK","callStatus":"in-progress",
"callerId":"+15083084809","accountSid":"9351f46a-678c-43f5-b8a6-d4eb58d131af","traceId":"8f14e45fceea167a5a36dedd4bea2543",
"applicationSid":"0dddaabf-0a30-43e3-84e8-426873b1a78b","fsSipAddress":"10.0.1.5:5060",
"customerData":{"crm":{"id":42}},"headers":{"X-Trace":"abc"},"pipeline":"support","vip":true}`

func TestJambonzConversation(t *testing.T) {
	s := forkSession(t, "jambonz", "")
	frame := slin(16000, 640)
	start := &transport.Start{
		CallID:    "b7a8c2e4-4f2a-4d9e-9c1b-6f0e2d3a1b5c",
		AccountID: "9351f46a-678c-43f5-b8a6-d4eb58d131af",
		Params: map[string]string{
			"sampleRate": "16000", "mixType": "mono", "callSid": "b7a8c2e4-4f2a-4d9e-9c1b-6f0e2d3a1b5c", "direction": "inbound",
			"from": "+15083084809", "to": "+15083728299", "callId": "a84b4c76e66710@pc33.atlanta.com",
			"sbcCallid": "2ea5e1d2-8b34-4cfa-9c7b-3e4d5f6a7b8c", "sipStatus": "200", "sipReason": "OK", "callStatus": "in-progress",
			"callerId": "+15083084809", "accountSid": "9351f46a-678c-43f5-b8a6-d4eb58d131af", "traceId": "8f14e45fceea167a5a36dedd4bea2543",
			"applicationSid": "0dddaabf-0a30-43e3-84e8-426873b1a78b", "fsSipAddress": "10.0.1.5:5060", "pipeline": "support", "vip": "true",
		},
	}
	decodeSteps(t, s, []decodeStep{
		{transport.Text, jambonzMetadata, transport.Inbound{Kind: transport.KindStart, Start: start}},
		{transport.Binary, string(frame), transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
		// "Passing DTMF": {"event": "dtmf", "dtmf": "2", "duration": "1600"}
		{transport.Text, `{
  "event": "dtmf",
  "dtmf": "2",
  "duration": "1600"
}`, transport.Inbound{Kind: transport.KindDTMF, Digit: '2'}},
		// "When that point in the audio stream is later reached during
		// playback, you will get a matching json frame back"
		{transport.Text, `{
  "type": "mark",
  "data": {
    "name": "my-mark-1",
    "event": "playout"
  }
}`, transport.Inbound{Kind: transport.KindMark, Mark: "my-mark-1"}},
		{transport.Text, `{"type": "mark", "data": {"name":"my-mark-2", "event": "cleared"}}`, transport.Inbound{Kind: transport.KindMark, Mark: "my-mark-2"}},
		{transport.Text, `{"type": "playDone"}`, transport.Inbound{}},
		{transport.Binary, string(frame), transport.Inbound{Kind: transport.KindAudio, Audio: frame}},
	})
	if f := s.Format(); f != (codec.Format{Encoding: codec.L16, Rate: 16000}) {
		t.Fatalf("format %v, want 16 kHz L16 from sampleRate", f)
	}
	// "Your application should then send binary frames of linear-16 pcm
	// raw data with the specified sample rate"
	if typ, msg := s.Audio(frame); typ != transport.Binary || !bytes.Equal(msg, frame) {
		t.Errorf("Audio: %v of %d bytes, want the frame as a binary frame", typ, len(msg))
	}
	for want, r := range map[string]func() (transport.MessageType, []byte, bool){
		`{"type":"killAudio"}`:  s.Clear,
		`{"type":"disconnect"}`: s.Hangup,
	} {
		if typ, msg, ok := r(); typ != transport.Text || !ok || string(msg) != want {
			t.Errorf("rendered %v %s %v, want %s", typ, msg, ok, want)
		}
	}
	if third(s.Mark("m")) || third(s.Event("vad", "speech_start", nil, 0)) {
		t.Error("a mark or an event rendered; the host sends jambonz neither")
	}
}

// A jambonz bot hears what jambonz would say, and is heard as jambonz
// hears it: its marks come back as playout events.
func TestJambonzDialect(t *testing.T) {
	b := newBot(t, "jambonz", codec.Format{Encoding: codec.L16, Rate: 8000}, nil)
	got := opened(t, b)
	want := `{"sampleRate":8000,"mixType":"mono","callSid":"` + callSid + `","accountSid":"` + accountSid + `","lang":"en","pipeline":"loud"}`
	if len(got) != 1 || got[0].msg != want {
		t.Errorf("metadata %v, want %s", got, want)
	}
	if _, msg, _ := b.MarkPlayed("my-mark-1"); string(msg) != `{"type":"mark","data":{"name":"my-mark-1","event":"playout"}}` {
		t.Errorf("MarkPlayed: %s", msg)
	}
	if _, msg, _ := b.DTMF('5'); string(msg) != `{"event":"dtmf","dtmf":"5"}` {
		t.Errorf("DTMF: %s", msg)
	}
	if third(b.DTMF('x')) {
		t.Error("DTMF of a byte that is not a key")
	}
}
