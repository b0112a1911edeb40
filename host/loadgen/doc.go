// Package loadgen measures how many concurrent calls a voxhost server (or
// any server speaking its raw or Twilio WebSocket protocols) carries before
// latency or loss degrade, as `voxhost loadgen` reports it.
//
// The load is open loop: every call sends one 160-byte μ-law frame every
// 1/fps seconds on its own schedule, whatever the replies do, as a telephone
// network does. A closed-loop client that waits for each reply before
// sending the next frame slows down exactly when the server does, and so
// hides saturation; here a slow server shows as growing round trips and
// unanswered frames instead. Replies are matched to sends in order, per call.
//
// The generator shares the machine with what it measures more often than
// not, so a call costs it little: one goroutine writing on an absolute
// schedule and one reading, message buffers rendered once per call, and no
// heap allocation per frame. Round trips go into a few shared HDR histograms
// rather than one per call, which would cost 139 KB each.
//
// Around each point the server's /metrics (same host and port, over HTTP)
// is read for its memory, CPU time, active calls and GC pauses; a server
// without /metrics simply gets no server figures.
package loadgen
