package sip

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the SIP endpoint's, beside the server's call metrics (which
// count SIP calls under protocol="sip").
type metrics struct {
	requests  *prometheus.CounterVec // by method
	responses *prometheus.CounterVec // final responses to INVITE, by code
	dropped   *prometheus.CounterVec // messages dropped unanswered, by reason
	setup     prometheus.Histogram   // INVITE to 200 OK sent

	rtpPackets *prometheus.CounterVec // by direction
	rtpIn      prometheus.Counter     // rtpPackets' in, looked up once: the frame path's
	rtpOut     prometheus.Counter
	rtpIgnored *prometheus.CounterVec // by reason
	rtpLost    prometheus.Counter
	rtpLate    prometheus.Counter
	concealed  prometheus.Counter
	drained    prometheus.Counter
	comfort    prometheus.Counter
	dtmf       *prometheus.CounterVec // by direction
	depth      prometheus.Histogram   // jitter buffer delay, per call
	jitter     prometheus.Histogram   // RFC 3550 jitter, per call
	rtcp       *prometheus.CounterVec // reports received, by type
	remoteLoss prometheus.Histogram   // fraction lost the peer reports
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voxhost_sip_requests_total",
			Help: "SIP requests received from allowed sources, by method."}, []string{"method"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voxhost_sip_invite_responses_total",
			Help: "Final responses to INVITEs, by status code."}, []string{"code"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voxhost_sip_dropped_total",
			Help: "SIP messages dropped unanswered: rate_limited (past sip.rate_per_second), too_many_headers (past sip.max_headers)."}, []string{"reason"}),
		setup: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "voxhost_sip_setup_seconds",
			Help: "Time from an INVITE's arrival to its 200 OK.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		rtpPackets: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voxhost_rtp_packets_total",
			Help: "RTP packets received (in) and sent (out)."}, []string{"direction"}),
		rtpIgnored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voxhost_rtp_ignored_total",
			Help: "RTP packets ignored: address (not from the call's peer), ssrc (another stream), payload_type (not negotiated), malformed."}, []string{"reason"}),
		rtpLost: prometheus.NewCounter(prometheus.CounterOpts{Name: "voxhost_rtp_lost_total",
			Help: "RTP packets whose turn in the jitter buffer came without them."}),
		rtpLate: prometheus.NewCounter(prometheus.CounterOpts{Name: "voxhost_rtp_late_total",
			Help: "RTP packets that arrived after their turn and were dropped."}),
		concealed: prometheus.NewCounter(prometheus.CounterOpts{Name: "voxhost_rtp_concealed_frames_total",
			Help: "Frames played by loss concealment (the last frame fading, then silence) instead of a missing packet."}),
		drained: prometheus.NewCounter(prometheus.CounterOpts{Name: "voxhost_rtp_drained_frames_total",
			Help: "Frames the jitter buffer dropped to bring its delay back to its target after a burst of packets."}),
		comfort: prometheus.NewCounter(prometheus.CounterOpts{Name: "voxhost_rtp_comfort_silence_frames_total",
			Help: "Silent frames sent to a peer because the host had no audio for it (a quiet bot)."}),
		dtmf: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voxhost_rtp_dtmf_total",
			Help: "RFC 4733 telephone-events (digits) received (in) and sent (out)."}, []string{"direction"}),
		depth: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "voxhost_rtp_jitter_buffer_delay_seconds",
			Help: "Mean delay the jitter buffer added to a call, observed as the call ends.", Buckets: []float64{.02, .04, .06, .08, .1, .15, .2, .3, .5, 1}}),
		jitter: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "voxhost_rtp_jitter_seconds",
			Help: "RFC 3550 interarrival jitter of a call's inbound RTP, observed as the call ends.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 12)}),
		rtcp: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "voxhost_rtcp_reports_total",
			Help: "RTCP reports received, by type (sr, rr)."}, []string{"type"}),
		remoteLoss: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "voxhost_rtcp_remote_loss_ratio",
			Help: "Fraction of the host's RTP the peer reports lost, per RTCP report.", Buckets: []float64{0, .01, .02, .05, .1, .2, .5, 1}}),
	}
	m.rtpIn, m.rtpOut = m.rtpPackets.WithLabelValues("in"), m.rtpPackets.WithLabelValues("out")
	for _, d := range []string{"in", "out"} {
		m.rtpPackets.WithLabelValues(d)
		m.dtmf.WithLabelValues(d)
	}
	for _, r := range []string{"address", "ssrc", "payload_type", "malformed"} {
		m.rtpIgnored.WithLabelValues(r)
	}
	for _, r := range []string{"rate_limited", "too_many_headers"} {
		m.dropped.WithLabelValues(r)
	}
	reg.MustRegister(m.requests, m.responses, m.dropped, m.setup, m.rtpPackets, m.rtpIgnored, m.rtpLost, m.rtpLate,
		m.concealed, m.drained, m.comfort, m.dtmf, m.depth, m.jitter, m.rtcp, m.remoteLoss)
	return m
}
