package sip

import (
	"encoding/json"
	"fmt"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
)

// protocolName names SIP calls in the host's logs and metrics.
const protocolName = "sip"

// A call's media leg hands the call loop messages of two kinds: a Binary
// message is one frame of the call's G.711, a Text message a control
// whose first byte says which.
const (
	ctlDigit  = 'd' // a telephone-event, the digit after it
	ctlHold   = 'h' // the peer put the call on hold
	ctlResume = 'r' // the peer took it off hold
)

// protocol is the transport.Protocol of one SIP call: its format is the
// codec its offer and answer agreed on, so each call has its own.
type protocol struct{ format codec.Format }

func (protocol) Name() string { return protocolName }

// Path is empty: SIP calls come from the SIP listener, not a WebSocket.
func (protocol) Path() string { return "" }

// StartsOnConnect is true: the answer starts the stream, and its
// parameters came with the INVITE.
func (protocol) StartsOnConnect() bool { return true }

// Buffers is false: RTP is played as it arrives, so the host paces.
func (protocol) Buffers() bool { return false }

func (p protocol) NewSession(cfg transport.SessionConfig) (transport.Session, error) {
	if cfg.MaxFrameMs < frameMs {
		return nil, fmt.Errorf("sip: frames are %d ms, longer than the host's limit of %d ms", frameMs, cfg.MaxFrameMs)
	}
	return &session{format: p.format}, nil
}

// session decodes what the media leg hands the call loop and renders
// what the host sends the peer: audio, and a plugin's or a bot's DTMF as
// a telephone-event.
type session struct {
	format codec.Format
	digit  [2]byte
}

func (s *session) Decode(typ transport.MessageType, msg []byte, in *transport.Inbound) error {
	*in = transport.Inbound{}
	if typ == transport.Binary {
		in.Kind, in.Audio = transport.KindAudio, msg
		return nil
	}
	if len(msg) == 0 {
		return &transport.ProtocolError{Protocol: protocolName, Reason: "an empty control message"}
	}
	switch msg[0] {
	case ctlDigit:
		if len(msg) == 2 {
			in.Kind, in.Digit = transport.KindDTMF, msg[1]
			return nil
		}
	case ctlHold:
		in.Kind = transport.KindPause
		return nil
	case ctlResume:
		in.Kind = transport.KindResume
		return nil
	}
	return &transport.ProtocolError{Protocol: protocolName, Reason: fmt.Sprintf("unknown control message %q", msg)}
}

func (s *session) Format() codec.Format { return s.format }

func (s *session) Audio(frame []byte) (transport.MessageType, []byte) {
	return transport.Binary, frame
}

// Mark is not carried: RTP has no marks.
func (s *session) Mark(string) (transport.MessageType, []byte, bool) { return 0, nil, false }

// Clear is not carried: the host paces, so it holds what it has not sent.
func (s *session) Clear() (transport.MessageType, []byte, bool) { return 0, nil, false }

// Event renders a plugin's DTMF ("dtmf", data a JSON string of one
// digit) as a telephone-event for the peer; other events have no place
// in RTP.
func (s *session) Event(_, name string, data []byte, _ int64) (transport.MessageType, []byte, bool) {
	if name != abi.EmitDTMF {
		return 0, nil, false
	}
	var d string
	if err := json.Unmarshal(data, &d); err != nil || len(d) != 1 {
		return 0, nil, false
	}
	return s.Digit(d[0])
}

// Digit renders a key the bot pressed as a telephone-event for the peer
// (transport.DigitSender).
func (s *session) Digit(d byte) (transport.MessageType, []byte, bool) {
	if eventCode(d) < 0 {
		return 0, nil, false
	}
	s.digit = [2]byte{ctlDigit, d}
	return transport.Text, s.digit[:], true
}

// Hangup is nothing on the media: the leg's close sends the BYE.
func (s *session) Hangup() (transport.MessageType, []byte, bool) { return 0, nil, false }

// eventCode is the RFC 4733 event of a DTMF digit, or -1.
func eventCode(d byte) int {
	switch {
	case d >= '0' && d <= '9':
		return int(d - '0')
	case d == '*':
		return 10
	case d == '#':
		return 11
	case d >= 'A' && d <= 'D':
		return 12 + int(d-'A')
	}
	return -1
}

// eventDigit is the digit of an RFC 4733 DTMF event, or 0.
func eventDigit(e byte) byte {
	switch {
	case e <= 9:
		return '0' + e
	case e == 10:
		return '*'
	case e == 11:
		return '#'
	case e <= 15:
		return 'A' + e - 12
	}
	return 0
}
