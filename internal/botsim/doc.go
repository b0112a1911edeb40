// Package botsim is a voice bot for testing relayed calls: the far end
// voxhost dials when a route has an upstream. It speaks the bot's side of
// the dialects voxhost speaks to bots — Twilio Media Streams as a bot
// written for Twilio hears it, the raw protocol (binary audio, JSON
// events) and the OpenAI Realtime API's event schema — and answers in one
// of two modes:
//
//   - echo sends every audio frame back after a fixed delay, unchanged,
//     as the bot's answer. A load test times the caller's round trip
//     through the host, the bot and the host's playout clock with it.
//   - speak sends a recording when the stream starts, in chunks, as fast
//     as possible or at a speed factor, then a mark named after it
//     (OpenAI: the end of the response), and again every so often.
//
// It records per call what it received (start metadata, audio, DTMF,
// marks and their acknowledgements, clears, cancels, truncations, stop),
// so that tests assert on what the host said, and it can barge in on
// request (Twilio's and raw's clear, OpenAI's speech_started). Every
// record is capped, so a long load test does not grow the simulator.
//
// The speech providers' servers (Gemini Live, Deepgram's Voice Agent,
// ElevenLabs' agents) also refuse audio sent before their acknowledgement
// of the session set-up, which Config.HoldAck withholds until
// Sim.Acknowledge; say what such a provider says besides audio on request
// (Sim.Narrate: transcripts, a tool call, a message of an unknown type);
// and, with Config.ElevenLabsKey, play a private ElevenLabs agent with its
// get-signed-url endpoint.
//
// Where the bot's side of a dialect is a role voxhost has already, it is
// reused: the Twilio bot decodes and renders with transport.Twilio's
// sessions, the carrier role of the same protocol, and the raw bot with
// transport.Raw's. OpenAI's schema exists nowhere else in the module,
// so it is read and written here, with encoding/json for everything but
// the audio deltas.
package botsim
