package transport

import (
	"github.com/voxhost/voxhost/host/codec"
)

const twilioName = "twilio"

// Twilio returns the Twilio Media Streams protocol of a bidirectional
// stream (<Connect><Stream>), as documented at
// https://www.twilio.com/docs/voice/media-streams/websocket-messages.
// Twilio sends only JSON text messages: connected, then start, then media
// (base64 μ-law, 20 ms each), dtmf, mark and finally stop. The host answers
// with media, mark and clear messages addressed by the stream's streamSid;
// Twilio accepts nothing else, so Event renders nothing. Twilio's docs give
// the host's media these members only: no sequenceNumber, chunk or
// timestamp is sent back. Its clear returns the marks queued behind it.
func Twilio() Protocol { return twilio }

// twilio is the shape the other JSON carriers copied, in the skeleton's
// terms (jsoncarrier.go); its client role is in twilio_client.go.
var twilio = newJSONCarrier(jsonCarrier{
	endpoint:       endpoint{name: twilioName, path: "/twilio", buffers: true},
	carrier:        "Twilio",
	id:             "streamSid",
	format:         codec.Telephony,
	checkFormat:    checkTwilioFormat,
	binaryOnStream: "binary message on a Twilio stream",
	binaryFromBot:  "binary message from a Twilio bot",
	start:          twilioStart,
	newBot:         func(b carrierBot) BotSession { return &twilioBot{b} },
	// A bot's key press, in the shape of the dtmf message Twilio sends:
	// voxhost's own addition (Twilio takes none), for a caller whose
	// protocol carries keys.
	botEvents: []jsonEvent{{event: "dtmf", decode: func(msg []byte, in *Inbound) error {
		return decodeCarrierDTMF(twilioName, msg, in)
	}}},
})

func init() {
	RegisterProtocol(twilio)
	RegisterDialect(twilio)
}

// twilioStartMsg is what the host reads of a start message. Twilio repeats
// streamSid at the top level, which stands in if start.streamSid is absent.
type twilioStartMsg struct {
	StreamSid string `json:"streamSid"`
	Start     *struct {
		StreamSid        string            `json:"streamSid"`
		AccountSid       string            `json:"accountSid"`
		CallSid          string            `json:"callSid"`
		Tracks           []string          `json:"tracks"`
		CustomParameters map[string]string `json:"customParameters"`
		MediaFormat      *struct {
			Encoding   string `json:"encoding"`
			SampleRate int    `json:"sampleRate"`
			Channels   int    `json:"channels"`
		} `json:"mediaFormat"`
	} `json:"start"`
}

// twilioStart reads a start message: μ-law at 8 kHz, Twilio's only format.
func twilioStart(s *jsonSession, msg []byte) (*Start, error) {
	var m twilioStartMsg
	if err := decodeMessage(twilioName, "start", msg, &m); err != nil {
		return nil, err
	}
	st := m.Start
	if st == nil {
		return nil, protocolErrorf(twilioName, "start message without a start object")
	}
	sid := st.StreamSid
	if sid == "" {
		sid = m.StreamSid
	}
	if sid == "" {
		return nil, protocolErrorf(twilioName, "start message without start.streamSid")
	}
	if err := checkCarrierStart(twilioName, st.CustomParameters, "start.customParameters", st.Tracks,
		[2]string{"start.streamSid", sid}, [2]string{"start.callSid", st.CallSid}, [2]string{"start.accountSid", st.AccountSid}); err != nil {
		return nil, err
	}
	mf := st.MediaFormat
	if mf == nil {
		return nil, protocolErrorf(twilioName, "start message without start.mediaFormat")
	}
	if mf.Encoding != EncodingMulaw || mf.SampleRate != codec.Telephony.Rate || mf.Channels != 1 {
		return nil, unsupportedFormat(twilioName, "unsupported media format %s at %d Hz, %d channel(s); voxhost takes %q at %d Hz, 1 channel",
			excerpt(mf.Encoding), mf.SampleRate, mf.Channels, EncodingMulaw, codec.Telephony.Rate)
	}
	s.begin(sid, codec.Telephony, codec.Telephony)
	return &Start{StreamID: sid, CallID: st.CallSid, AccountID: st.AccountSid, Tracks: st.Tracks, Params: st.CustomParameters}, nil
}
