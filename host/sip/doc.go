// Package sip makes voxhost a SIP trunk endpoint: a user agent server
// (github.com/emiago/sipgo) on UDP and TCP that answers INVITEs from the
// configured trunks, negotiates G.711 and RFC 4733 telephone-events by
// SDP offer/answer, and carries each call's audio over RTP
// (github.com/pion/rtp, pion/rtcp) through a small adaptive jitter
// buffer with loss concealment.
//
// Each answered call is handed to the host's server as a call like any
// other (server.Admit, then Admission.Serve with the call's media as its
// leg): the same routes, pipelines, bot legs, limits, admission, metrics
// and drain. Files by concern: uas.go the signalling, sdp.go offer and
// answer, media.go RTP and RTCP, jitter.go the jitter buffer, guard.go
// source allow-lists, rate limits and digest authentication, ports.go the
// RTP port range, protocol.go the call's transport.Session.
//
// Not supported: SRTP, video, REFER (transfers), delayed offer (an INVITE
// without SDP), packetisations other than 20 ms paced at their own rate.
package sip
