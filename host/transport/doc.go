// Package transport is the host's wire-protocol layer: it turns the messages
// a call's WebSocket carries into Inbound values and renders the host's
// replies, for each protocol a client may speak (raw μ-law on /ws, Twilio
// Media Streams on /twilio). It knows nothing of WebSocket libraries, plugins
// or codecs, so the call loop drives every protocol through the same Session
// interface and a new protocol is one more Protocol value, not a change to
// the loop. The client role, spoken to the voice bot of a relayed call,
// is a Dialect (upstream.go), registered by name: each carrier's file holds
// both roles, and openai.go is a dialect only.
//
// # Adding a carrier or a dialect
//
// A protocol registers itself in its file's init function
// (RegisterProtocol, RegisterDialect); its type embeds endpoint (name, path,
// whether it starts on connect and buffers) and adds NewSession and the
// optional interfaces its carrier needs (MarkDropper, AudioChunker,
// FrameFloor, OrderedReplies, Subprotocoler, Recognizer). A protocol in
// another package implements Protocol's methods itself and
// registers the same way; the skeleton below is this package's.
//
// A carrier of Twilio's shape — JSON text messages dispatched on one
// member, base64 audio in an object's member, a start message, marks that
// come back once played — is a jsonCarrier (jsoncarrier.go): one value that
// is both its Protocol and its Dialect. Its names for the messages and the
// members (jsonFields, jsonEvents, id, seqKey), its codec rules (format,
// networkL16, a send format chosen at start) and its mark and clear
// semantics (flatMark, cleared, clearDropsMarks) are data, with Twilio's
// where it sets none; what is really its own is a hook: the start message
// it reads (start, connect), the further messages it sends (events), and
// the client role's Open, Audio, DTMF and Stop renderings, in a small type
// embedding carrierBot. twilio.go, telnyx.go, exotel.go and plivo.go are
// such pages. The skeleton gives the media path (no allocation, the
// scanner below), the dtmf, mark and clear messages both ways, the limits
// of limits.go, and the errors, each naming the carrier. A bot dialect that
// dispatches on another member or keeps its audio elsewhere (a "type"
// member, an "audio_event" object) sets jsonFields accordingly; one whose
// messages are not of this shape (OpenAI Realtime's, Genesys' AudioHook,
// the binary PBX protocols) implements Session or BotSession itself, as
// their files do.
//
// Every protocol's tests check its messages against the provider's
// published examples, and its decoders have fuzz targets (testdata/fuzz).
//
// # The media path
//
// The call loop may allocate nothing per audio frame, so decoding an audio
// message and rendering an audio reply both work in buffers the Session owns
// and reuses. The JSON carriers wrap every 20 ms frame in JSON;
// encoding/json would allocate for each one, so media messages are read by
// a small scanner (json.go) that validates the whole object in place and
// picks out the few members the host needs. It beats a general library on
// the same work (RATIONALE.md, "The JSON carriers' skeleton"). Rare
// messages (start, dtmf, mark) may allocate and use encoding/json.
package transport
