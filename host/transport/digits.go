package transport

// DigitSender is implemented by a caller's Session whose protocol can
// press a key toward the caller: SIP's RFC 4733 telephone-events. A key
// a bot presses (its dialect's KindDTMF) reaches the caller through it,
// after the audio the bot sent before it; the carriers' WebSocket
// protocols take no keys from the host, so their callers get none.
type DigitSender interface {
	// Digit renders the key digit ('0'-'9', '*', '#' or 'A'-'D') for the
	// caller; there is none for a byte that is not a key.
	Digit(digit byte) (MessageType, []byte, bool)
}
