package server

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/transport"
)

// Leg is a caller leg whose transport another package carries (SIP's RTP,
// host/sip): the call reads its messages, decodes them with the call's
// protocol session and writes what the session renders, as it does a
// WebSocket's.
type Leg interface {
	// ReadMessage reads the next message into *buf, which it may grow up
	// to limit bytes. io.EOF says the far end ended the call in order
	// (a BYE); any other error that the leg failed.
	ReadMessage(buf *[]byte, limit int) (transport.MessageType, []byte, error)
	// WriteMessage sends one message the session rendered.
	WriteMessage(typ transport.MessageType, msg []byte) error
	// Close ends the leg from the host's side, saying why (a drain, a
	// limit, a plugin's failure); it must not block.
	Close(reason string)
}

// MediaReporter is implemented by a Leg whose transport keeps figures of
// its own (SIP's RTP and RTCP): Calls shows them with the call, as its
// Media, for the console.
type MediaReporter interface {
	// MediaStats says what the leg's media did so far; it is called
	// from other goroutines than the call's.
	MediaStats() MediaStats
}

// MediaStats is what a call's RTP says so far: of the peer's stream as
// the host received it, and (from the peer's RTCP reports) of the host's
// as the peer did.
type MediaStats struct {
	// Packets counts the RTP packets received; Lost those that never
	// came, Late those that came after their turn, Concealed the frames
	// played in place of a missing packet.
	Packets   uint64 `json:"packets"`
	Lost      uint64 `json:"lost"`
	Late      uint64 `json:"late"`
	Concealed uint64 `json:"concealed"`
	// JitterMs is the peer's stream's interarrival jitter (RFC 3550);
	// BufferMs the jitter buffer's mean depth.
	JitterMs float64 `json:"jitter_ms"`
	BufferMs float64 `json:"buffer_ms"`
	// PeerReports counts the peer's RTCP reports of the host's stream;
	// PeerLostPercent and PeerJitterMs are what the last one said.
	PeerReports     int     `json:"peer_reports"`
	PeerLostPercent float64 `json:"peer_lost_percent"`
	PeerJitterMs    float64 `json:"peer_jitter_ms"`
	// Held says the peer has the call on hold.
	Held bool `json:"held"`
}

// Refusal says why Admit did not admit a call, in the terms every
// protocol's refusal is counted in (voxhost_calls_rejected_total).
type Refusal struct {
	// Reason is the metric's reason: "unknown_pipeline", "draining",
	// "overloaded", "capacity", a shed reason such as "predicted".
	Reason string
	// Message says it for a person.
	Message string
	// RetryAfter is when asking again may succeed; 0 when it will not.
	RetryAfter time.Duration
}

// Error implements error.
func (r *Refusal) Error() string { return r.Message }

// UnknownRoute reports whether the call asked for a route the server does
// not have.
func (r *Refusal) UnknownRoute() bool { return r.Reason == "unknown_pipeline" }

// Admission is a call admitted before its leg is up: it holds a call slot
// until Serve runs the call, or Abandon gives it back (the far end
// cancelled before the answer).
type Admission struct {
	s    *Server
	c    *call
	once sync.Once
}

// Admit admits a call of proto on route ("" for the default) from
// remote, with params as the call's parameters (the {param.NAME} of an
// upstream URL), as a WebSocket call is admitted before its upgrade:
// drain, overload, predicted CPU and capacity. proto must start on
// connect: the call starts when Serve is called, and waits there for a
// set-up slot (a call that gets none within the set-up wait is shed). An admitted call must be
// served or abandoned: until then it holds its slots, and a drain waits
// for it.
func (s *Server) Admit(proto transport.Protocol, route string, params map[string]string, remote string) (*Admission, *Refusal) {
	if !proto.StartsOnConnect() {
		panic(fmt.Sprintf("server: Admit needs a protocol that starts on connect; %s does not", proto.Name()))
	}
	if route != "" {
		if set := s.routes.Load(); set.byName[route] == nil {
			return nil, s.refuse(&Refusal{Reason: "unknown_pipeline", Message: fmt.Sprintf("unknown pipeline %q (have %s)", route, strings.Join(routeNames(set.byName), ", "))})
		}
	}
	if err := transport.CheckParams("params", params); err != nil {
		return nil, s.refuse(&Refusal{Reason: "bad_query", Message: err.Error()})
	}
	if why, msg, ok := s.admit(route); !ok {
		retry := time.Second
		if why == "overloaded" || why == shedPredicted {
			retry = 2 * time.Second // overloadRetryAfter
		}
		return nil, s.refuse(&Refusal{Reason: why, Message: msg, RetryAfter: retry})
	}
	query := url.Values{}
	for k, v := range params {
		query.Set(k, v)
	}
	query.Del("call_id") // ids come from the host: a caller's need not be one CheckID takes
	c, err := s.newCall(proto, route, query, remote)
	if err != nil {
		s.release()
		return nil, s.refuse(&Refusal{Reason: "bad_query", Message: err.Error()})
	}
	// The set-up slot is taken when the call starts, as a call with a
	// start message takes it: between the admission and the start lie
	// the far end's round trips (a SIP answer waits for its ACK), which
	// must not hold a slot every other call's set-up waits for.
	return &Admission{s: s, c: c}, nil
}

func (s *Server) refuse(r *Refusal) *Refusal {
	s.metrics.rejected.WithLabelValues(r.Reason).Inc()
	return r
}

// CallID is the id the call has in the host's logs, metrics and console.
func (a *Admission) CallID() string { return a.c.id }

// Serve runs the call over leg until it ends, then gives back its slots.
// It is called once, instead of Abandon.
func (a *Admission) Serve(leg Leg) {
	a.once.Do(func() {
		defer a.s.release()
		defer a.c.releaseSetup()
		a.c.conn = extLeg{leg}
		a.s.serve(a.c)
	})
}

// Abandon gives back the slot of a call that never came up. It is a
// no-op after Serve.
func (a *Admission) Abandon() {
	a.once.Do(a.s.release)
}

// extLeg is a Leg as the call loop reads and writes a connection.
type extLeg struct{ l Leg }

func (e extLeg) read(buf *[]byte, limit int) (transport.MessageType, []byte, error) {
	typ, msg, err := e.l.ReadMessage(buf, limit)
	if errors.Is(err, io.EOF) {
		err = errPeerClosed
	}
	return typ, msg, err
}

func (e extLeg) write(typ transport.MessageType, msg []byte) error { return e.l.WriteMessage(typ, msg) }

func (e extLeg) close(_ websocket.StatusCode, reason string) { e.l.Close(reason) }

func (e extLeg) closeNow() { e.l.Close("") }

// Registerer is where the server's metrics are registered, for a
// package that serves calls through Admit to register its own beside
// them on /metrics.
func (s *Server) Registerer() prometheus.Registerer { return s.metrics.registry }
