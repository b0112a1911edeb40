// Package transport is the host's wire-protocol layer: it turns the messages
// a call's WebSocket carries into Inbound values and renders the host's
// replies, for each protocol a client may speak (raw μ-law on /ws, Twilio
// Media Streams on /twilio). It knows nothing of WebSocket libraries, plugins
// or codecs, so the call loop drives every protocol through the same Session
// interface and a new protocol is one more Protocol value, not a change to
// the loop. The client role, spoken to the voice bot of a relayed call,
// is a Dialect (upstream.go), registered by name: twilio (Twilio Media
// Streams as Twilio speaks it), raw and openai-realtime, one file each.
//
// The call loop may allocate nothing per audio frame, so decoding an audio
// message and rendering an audio reply both work in buffers the Session owns
// and reuses. Twilio wraps every 20 ms frame in JSON; encoding/json would
// allocate for each one, so media messages are read by a small scanner that
// validates the whole object in place and picks out the few members the host
// needs. Rare messages (start, dtmf, mark) may allocate and use encoding/json.
package transport
