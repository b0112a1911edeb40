// Package server is voxhost's HTTP front: the WebSocket endpoints where
// calls arrive (/ws raw μ-law, /twilio Twilio Media Streams), the call loop
// that runs each call's pipeline, and the operations a production host
// needs — admission limits, overload shedding (on CPU use and the wait for
// a core), a bound on concurrent call set-ups, auth, origin policy, idle
// timeouts, metrics, health, readiness and graceful drain.
//
// One goroutine runs each call: it reads a message, decodes the μ-law into
// the first plugin's buffer, runs the pipeline, encodes straight from the
// last plugin's buffer and writes the reply, allocating nothing per frame.
package server
