// Package loadgen measures how many concurrent calls a voxhost server (or
// any server speaking the protocols host/transport registers) carries before
// latency or loss degrade, as `voxhost loadgen` reports it.
//
// A call speaks its protocol through the protocol's client role in
// host/transport (its Dialect), as the carrier would: Twilio's connected,
// start and media, AudioSocket's UUID and slin frames over TCP, and so on;
// the same role decodes the host's replies. The generator has no wire
// format of its own.
//
// The load is open loop: every call sends one 20 ms frame (160 bytes of
// μ-law) every 1/fps seconds on its own schedule, whatever the replies do, as a telephone
// network does. A closed-loop client that waits for each reply before
// sending the next frame slows down exactly when the server does, and so
// hides saturation; here a slow server shows as growing round trips and
// unanswered frames instead. Replies are matched to sends in order, per call.
//
// The generator shares the machine with what it measures more often than
// not, so a call costs it little: one goroutine writing on an absolute
// schedule and one reading, each frame rendered into the session's own
// buffer, and no heap allocation per frame. Round trips go into a few shared HDR histograms
// rather than one per call, which would cost 139 KB each.
//
// Around each point the server's /metrics (same host and port, over HTTP)
// is read for its memory, CPU time, active calls and GC pauses; a server
// without /metrics simply gets no server figures.
package loadgen
