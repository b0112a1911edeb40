package server

import (
	"bytes"
	"net"
	"net/http"
	"net/url"

	"github.com/voxhost/voxhost/host/httpguard"
	"github.com/voxhost/voxhost/host/transport"
)

// doorJudge is what Serve's listener asks of each request before net/http
// reads it (httpguard.Door). A call that admission would refuse now is
// answered there: the 503, Retry-After and reason the handler would give
// it after the same checks, counted under the same metrics and in
// voxhost_door_refusals_total. A call that would be admitted is held: it
// counts, until net/http has read its request (doorLet), as one more call
// of the default route in the door's next judgements, since a surge's
// connections are accepted far faster than their handlers run, and a door
// that judged on the active calls alone would let the whole surge through
// to be refused by the handlers. The handler still admits or refuses each
// call it gets on the active calls alone.
//
// Everything else goes on to net/http unjudged: other paths, a pipeline the
// handler would answer 400 or 404 for. The door does not check the token:
// a caller without one learns that the host is full, which /readyz tells
// anyone.
func (s *Server) doorJudge(method, target []byte) (answer []byte, hold bool) {
	path, rawQuery, _ := bytes.Cut(target, []byte("?"))
	if string(method) != http.MethodGet || !s.callPaths[string(path)] {
		return nil, false
	}
	query, err := url.ParseQuery(string(rawQuery))
	if err != nil {
		return nil, false
	}
	route := query.Get("pipeline")
	if route != "" {
		if transport.CheckPipelineName("pipeline", route) != nil || s.routes.Load().byName[route] == nil {
			return nil, false
		}
	}
	held := s.doorHeld.Load()
	why, msg, refused := s.refusal(route, held)
	if !refused {
		if s.active.Load()+held < int64(s.opts.MaxCalls) {
			s.doorHeld.Add(1)
			return nil, true
		}
		why, msg = "capacity", capacityRefusal
	}
	s.metrics.rejected.WithLabelValues(why).Inc()
	s.metrics.doorRefused.Inc()
	return httpguard.Answer(http.StatusServiceUnavailable, retryAfter(why), msg), false
}

// doorLet is net/http's ConnState hook: a held call stops counting as
// held once its request has been read (its handler then admits it or not
// on the active calls), or its connection ended before that.
func (s *Server) doorLet(c net.Conn, st http.ConnState) {
	if st != http.StateNew && httpguard.Let(c) {
		s.doorHeld.Add(-1)
	}
}
