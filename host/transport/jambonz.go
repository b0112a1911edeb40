package transport

const jambonzName = "jambonz"

// jambonz's listen verb, as docs.jambonz.org/verbs/verbs/listen (and its
// source, jambonz/next-static-site markdown/docs/webhooks/listen.md)
// documents it, run by jambonz's own mod_audio_fork
// (jambonz/freeswitch-modules): the server "should be prepared to accept
// websocket connections with a subprotocol name of 'audio.jambonz.org'";
// "one text frame is sent immediately after the websocket connection is
// established", a JSON object of the call's attributes (callSid,
// accountSid, from, to, ...) "plus sampleRate and mixType", and the
// verb's metadata; then binary L16 frames. The verb for a voice bot:
//
//	{"verb": "listen", "url": "wss://voxhost.example.com/jambonz",
//	 "sampleRate": 16000, "passDtmf": true,
//	 "bidirectionalAudio": {"enabled": true, "streaming": true, "sampleRate": 16000}}
//
// with bidirectionalAudio.sampleRate equal to sampleRate: the host sends
// audio back at the stream's rate, binary L16 frames that jambonz plays to
// the caller, which it does only with streaming on. passDtmf sends keys as
// {"event":"dtmf","dtmf":"2","duration":"1600"}; a "pipeline" member in
// the verb's metadata picks a route. The host sends {"type":"killAudio"}
// to clear ("any audio that is playing out from the bidirectional socket
// as well as any buffered audio" is flushed) and {"type":"disconnect"} to
// hang up (it ends the listen verb). jambonz has no message for a
// plugin's event.
//
// Marks are decoded ({"type":"mark","data":{"name":…,"event":"playout"}})
// but the host sends none, and paces jambonz (Buffers false), because
// jambonz's marks cannot say when the audio before them has played: its
// module holds a mark until the next binary frame arrives and puts it in
// the audio as a sample of value 0xFFFF, so a mark after a bot's last
// words returns only when the bot speaks again, and while one is out any
// sample of -1 played fires it early (and is dropped); it holds 30 at most,
// and writes their names back into JSON unescaped. The host's own clock
// tells a bot when its marks have played instead. The same module holds
// back the tail of a bot's speech, up to 640 samples (80 ms at 8 kHz),
// until more audio comes: that is jambonz's, and the host cannot flush it.
var jambonz = &forkFlavor{
	name: jambonzName, path: "/jambonz", module: "jambonz",
	subprotocols: []string{"audio.jambonz.org"},
	clear:        true, hangup: true,
	defaultRate: 8000, objectOnly: true, marks: true,
}

func init() {
	RegisterProtocol(forkProtocol{jambonz})
	RegisterDialect(forkDialect{jambonz})
}
