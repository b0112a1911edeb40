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
//
// An embedding program (examples/embed) makes a plugin.Runtime, builds its
// routes' pipelines, hands both to New, and serves the result with Serve on
// its own listener (or mounts Handler on its own mux, then calls Drain and
// Close); SetRoutes swaps routes while calls run, and Admit lets a protocol
// of another package, such as host/sip, carry calls that are routed,
// admitted, metered and drained as the WebSocket ones are.
package server
