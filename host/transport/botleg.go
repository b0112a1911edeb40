package transport

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/voxhost/voxhost/host/codec"
)

// What the dialects (twilio_client.go, raw_client.go, openai.go) share:
// the rules for a bot's audio, a call's ids and parameters as they go out
// in a start message, and bounds on text a bot sends.

// checkBotAudio enforces the rules for audio a bot sends, n bytes in
// format f: not empty, at most maxAudio bytes, whole samples. Unlike a
// caller's frames (checkAudio) it need not be whole milliseconds: bots
// stream speech in pieces of any length (OpenAI's deltas are), and the
// playout queue cuts them into frames.
func checkBotAudio(protocol string, n, maxAudio int, f codec.Format) error {
	switch size := f.SampleBytes(); {
	case n == 0:
		return protocolErrorf(protocol, "empty audio frame")
	case n > maxAudio:
		return tooLong(protocol, n, maxAudio)
	case n%size != 0:
		return protocolErrorf(protocol, "audio of %d bytes is not a whole number of %d-byte %s samples", n, size, f.Encoding)
	}
	return nil
}

// streamID is the stream id a bot is told: the call's, for a caller leg
// whose carrier names no stream.
func (c CallInfo) streamID() string {
	if c.StreamID != "" {
		return c.StreamID
	}
	return c.CallID
}

// appendParams appends params as a JSON object of strings, in key order so
// that a call's start message is the same every time it is rendered.
func appendParams(dst []byte, params map[string]string) []byte {
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(params)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQuoted(dst, k)
		dst = append(dst, ':')
		dst = appendQuoted(dst, params[k])
	}
	return append(dst, '}')
}

// appendID appends the id the string token q holds to dst, or says why
// it cannot be kept as one (CheckID's rules). A bot's item ids arrive with
// every audio message, so a valid id costs no allocation when dst has room
// for MaxIDBytes.
func appendID(dst []byte, what string, q []byte) ([]byte, error) {
	n := len(dst)
	dst = appendText(dst, q)
	id := dst[n:]
	ok := len(id) <= MaxIDBytes
	for _, c := range id {
		ok = ok && idChar(c)
	}
	if !ok {
		return dst[:n], CheckID(what, string(id))
	}
	return dst, nil
}

// cutText bounds a text a bot sends that the host logs (an error's message)
// to max bytes, cut at a character boundary and marked as cut.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// errFormat is CheckFormat's refusal of a format a dialect cannot carry.
func errFormat(dialect string, f codec.Format, carries string) error {
	return fmt.Errorf("the %s dialect carries %s, not %s", dialect, carries, f)
}

// binaryBot is the state of a dialect that sends a bot the caller's audio
// as binary frames and everything else as short text messages.
type binaryBot struct {
	binaryAudio
	cfg BotConfig
	out []byte // the last rendered text message; the writing goroutine's
}

func newBinaryBot(cfg BotConfig) binaryBot {
	checkMaxAudio(cfg.MaxAudio)
	return binaryBot{cfg: cfg, out: make([]byte, 0, 256)}
}

// binaryAudio is Audio for the dialects that send a bot the caller's
// audio as it is, a binary message a frame.
type binaryAudio struct{}

// Audio sends the audio itself, as a binary message.
func (binaryAudio) Audio(audio []byte) (MessageType, []byte) { return Binary, audio }

// binaryBotAudio reads a bot's binary message of protocol as audio in the
// leg's format f, of maxAudio bytes at most, viewing msg. It is kept
// small enough for the compiler to inline into each Decode.
func binaryBotAudio(protocol string, msg []byte, maxAudio int, f codec.Format, in *Inbound) (err error) {
	if err = checkBotAudio(protocol, len(msg), maxAudio, f); err == nil {
		in.Audio, in.Kind = msg, KindAudio
	}
	return err
}

// textDigit renders a DTMF key as the text message head, the key and `"}`
// (`{"event":"dtmf","digit":"5"}`) into *out; there is none for a byte
// that is not a key.
func textDigit(out *[]byte, head string, digit byte) (MessageType, []byte, bool) {
	if !validDigit(digit) {
		return 0, nil, false
	}
	*out = append(append((*out)[:0], head...), digit, '"', '}')
	return Text, *out, true
}

// speechBot is what a dialect renders for what its provider has no
// message for (the speech-to-speech APIs): a key, an acknowledgement of a
// mark (the provider sends none), a plugin's event and the end of the
// stream (closing the socket ends the session).
type speechBot struct{}

// DTMF renders nothing: the provider has no message for a key.
func (speechBot) DTMF(byte) (MessageType, []byte, bool) { return 0, nil, false }

// MarkPlayed renders nothing: the provider sends no marks.
func (speechBot) MarkPlayed(string) (MessageType, []byte, bool) { return 0, nil, false }

// Event renders nothing: the provider has no use for a plugin's events.
func (speechBot) Event(string, string, []byte, int64) (MessageType, []byte, bool) {
	return 0, nil, false
}

// Stop renders nothing: closing the socket ends the session.
func (speechBot) Stop() (MessageType, []byte, bool) { return 0, nil, false }
