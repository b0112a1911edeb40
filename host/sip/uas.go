package sip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/server"
)

// routeHeader names the route a call asks for, before the Request-URI's
// user part.
const routeHeader = "X-Voxhost-Route"

// testRinging, set by the tests alone, holds every call between its 180
// and its answer until it returns; cancelled closes on the caller's
// CANCEL.
var testRinging atomic.Pointer[func(cancelled <-chan struct{})]

// Options configure an Endpoint.
type Options struct {
	// Config is the sip section of the host's config, validated.
	Config config.SIP
	// Server runs the calls the endpoint answers.
	Server *server.Server
	// Logger logs; nil means slog.Default().
	Logger *slog.Logger
	// Registerer takes the endpoint's metrics; nil means a registry of
	// its own.
	Registerer prometheus.Registerer
}

// Endpoint is voxhost's SIP user agent server: it answers INVITEs from
// the configured trunks with RTP media and hands each call to the
// server, as the WebSocket handler and the AudioSocket listener do.
type Endpoint struct {
	cfg    config.SIP
	srv    *server.Server
	log    *slog.Logger
	m      *metrics
	guard  *guard
	prefer []uint8

	mu    sync.Mutex
	calls map[string]*call // by dialog id
}

// call is one answered (or ringing) SIP call.
type call struct {
	dialog *sipgo.DialogServerSession
	media  *media
	offer  offer
	local  netip.AddrPort
	sdpVer uint64
	mu     sync.Mutex
	timer  time.Duration // the negotiated session interval; 0 for none
}

// New makes an endpoint; ListenAndServe serves it.
func New(opts Options) (*Endpoint, error) {
	if opts.Server == nil {
		return nil, errors.New("sip: no server to run the calls")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := opts.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	e := &Endpoint{cfg: opts.Config, srv: opts.Server, log: log.With("component", "sip"), m: newMetrics(reg), calls: map[string]*call{}}
	e.guard = newGuard(opts.Config, e.m)
	for _, c := range opts.Config.Codecs {
		pt := uint8(ptPCMU)
		if c == "pcma" {
			pt = ptPCMA
		}
		e.prefer = append(e.prefer, pt)
	}
	return e, nil
}

// ListenAndServe serves SIP on sip.listen, UDP and TCP on the same port,
// until ctx ends; ready, if not nil, gets the bound address first.
func (e *Endpoint) ListenAndServe(ctx context.Context, ready func(addr netip.AddrPort)) error {
	pc, err := net.ListenPacket("udp", e.cfg.Listen)
	if err != nil {
		return fmt.Errorf("sip: %w", err)
	}
	bound := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	tl, err := net.Listen("tcp", net.JoinHostPort(bound.Addr().String(), strconv.Itoa(int(bound.Port()))))
	if err != nil {
		_ = pc.Close()
		return fmt.Errorf("sip: tcp: %w", err)
	}
	parser := sip.NewParser()
	parser.MaxMessageLength = e.cfg.MaxMessageBytes
	// sipgo's own lines are its errors alone: it warns of what the host
	// counts (a dropped message) or of nothing a user can act on.
	stackLog := slog.New(errorsOnly{e.log.Handler()})
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("voxhost"), sipgo.WithUserAgentParser(parser),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerReadFilter(e.guard.filter), sip.WithTransportLayerLogger(stackLog)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(stackLog)))
	if err != nil {
		return err
	}
	defer ua.Close()
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(stackLog))
	if err != nil {
		return err
	}
	client, err := sipgo.NewClient(ua)
	if err != nil {
		return err
	}
	host := e.cfg.ExternalAddress
	if host == "" {
		host = bound.Addr().String()
	}
	dua := &sipgo.DialogUA{Client: client, ContactHDR: sip.ContactHeader{
		Address: sip.Uri{Scheme: "sip", User: "voxhost", Host: host, Port: int(bound.Port())}}}
	ports := newPortPool(bound.Addr(), e.cfg.RTPPortMin, e.cfg.RTPPortMax)
	srv.OnInvite(func(req *sip.Request, tx sip.ServerTransaction) { e.onInvite(req, tx, dua, ports) })
	srv.OnAck(func(req *sip.Request, tx sip.ServerTransaction) {
		if c := e.lookup(req); c != nil {
			_ = c.dialog.ReadAck(req, tx)
		}
	})
	srv.OnBye(e.onBye)
	srv.OnUpdate(e.onUpdate)
	srv.OnOptions(e.onOptions)
	for _, m := range []sip.RequestMethod{sip.REGISTER, sip.REFER, sip.MESSAGE, sip.SUBSCRIBE, sip.NOTIFY, sip.INFO, sip.PUBLISH} {
		srv.OnRequest(m, func(req *sip.Request, tx sip.ServerTransaction) {
			if e.admitted(req, tx) {
				e.respond(req, tx, 501, "Not Implemented")
			}
		})
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.Close(); _ = tl.Close() })
	defer stop()
	e.log.Info("serving SIP", "udp", bound.String(), "tcp", tl.Addr().String(), "rtp_ports", fmt.Sprintf("%d-%d", e.cfg.RTPPortMin, e.cfg.RTPPortMax))
	if ready != nil {
		ready(bound)
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.ServeUDP(pc) }()
	go func() { errc <- srv.ServeTCP(tl) }()
	err = <-errc
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// admitted says whether req may be served: from a trunk's source, within
// the header bound. It answers the refusals itself.
func (e *Endpoint) admitted(req *sip.Request, tx sip.ServerTransaction) bool {
	e.m.requests.WithLabelValues(string(req.Method)).Inc()
	if len(req.Headers()) > e.cfg.MaxHeaders {
		e.m.dropped.WithLabelValues("too_many_headers").Inc()
		e.respond(req, tx, 400, "Too Many Headers")
		return false
	}
	if e.guard.trunk(source(req)) == nil {
		e.respond(req, tx, 403, "Forbidden")
		return false
	}
	return true
}

func (e *Endpoint) respond(req *sip.Request, tx sip.ServerTransaction, code int, reason string, hdrs ...sip.Header) {
	res := sip.NewResponseFromRequest(req, code, reason, nil)
	for _, h := range hdrs {
		res.AppendHeader(h)
	}
	if req.IsInvite() {
		e.m.responses.WithLabelValues(strconv.Itoa(code)).Inc()
	}
	_ = tx.Respond(res)
}

// source is the address req came from.
func source(req *sip.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(req.Source())
	if err != nil {
		a, _ := netip.ParseAddr(req.Source())
		return a.Unmap()
	}
	return ap.Addr().Unmap()
}

func (e *Endpoint) lookup(req *sip.Request) *call {
	id, err := sip.DialogIDFromRequestUAS(req)
	if err != nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[id]
}

func (e *Endpoint) onOptions(req *sip.Request, tx sip.ServerTransaction) {
	if !e.admitted(req, tx) {
		return
	}
	e.respond(req, tx, 200, "OK", sip.NewHeader("Allow", "INVITE, ACK, BYE, CANCEL, OPTIONS, UPDATE"),
		sip.NewHeader("Accept", "application/sdp"), sip.NewHeader("Supported", "timer"))
}

func (e *Endpoint) onBye(req *sip.Request, tx sip.ServerTransaction) {
	e.m.requests.WithLabelValues(string(req.Method)).Inc()
	c := e.lookup(req)
	if c == nil {
		e.respond(req, tx, 481, "Call/Transaction Does Not Exist")
		return
	}
	_ = c.dialog.ReadBye(req, tx)
	c.media.peerEnded()
}

// onUpdate takes an UPDATE as a session refresh (RFC 4028); one with an
// offer is refused, as the host changes media only by re-INVITE.
func (e *Endpoint) onUpdate(req *sip.Request, tx sip.ServerTransaction) {
	e.m.requests.WithLabelValues(string(req.Method)).Inc()
	c := e.lookup(req)
	if c == nil {
		e.respond(req, tx, 481, "Call/Transaction Does Not Exist")
		return
	}
	if len(req.Body()) > 0 {
		e.respond(req, tx, 488, "Not Acceptable Here")
		return
	}
	res := sip.NewResponseFromRequest(req, 200, "OK", nil)
	e.refresh(c, req, res)
	_ = tx.Respond(res)
}

// refresh restarts c's session timer from req's Session-Expires, if the
// call has one, and says so in res.
func (e *Endpoint) refresh(c *call, req *sip.Request, res *sip.Response) {
	interval := sessionInterval(req, e.cfg.SessionExpires)
	if interval == 0 {
		return
	}
	c.mu.Lock()
	c.timer = interval
	c.mu.Unlock()
	c.media.expires.Store(time.Now().Add(interval).UnixNano())
	res.AppendHeader(sip.NewHeader("Session-Expires", fmt.Sprintf("%d;refresher=uac", int(interval.Seconds()))))
	res.AppendHeader(sip.NewHeader("Require", "timer"))
}

// sessionInterval is the session interval to answer req's
// Session-Expires with, at most ours; 0 when it offers none.
func sessionInterval(req *sip.Request, ours time.Duration) time.Duration {
	h := req.GetHeader("Session-Expires")
	if h == nil {
		h = req.GetHeader("x")
	}
	if h == nil {
		return 0
	}
	v, _, _ := strings.Cut(h.Value(), ";")
	secs, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || secs <= 0 {
		return 0
	}
	return min(time.Duration(secs)*time.Second, ours)
}

func (e *Endpoint) onInvite(req *sip.Request, tx sip.ServerTransaction, dua *sipgo.DialogUA, ports *portPool) {
	t0 := time.Now()
	if !e.admitted(req, tx) {
		return
	}
	if to := req.To(); to != nil && to.Params.Has("tag") {
		e.reinvite(req, tx)
		return
	}
	from := source(req)
	trunk := e.guard.trunk(from)
	if trunk.Username != "" && !e.guard.authorized(req, trunk) {
		e.respond(req, tx, 401, "Unauthorized", sip.NewHeader("WWW-Authenticate", e.guard.challenge()))
		return
	}
	o, err := parseOffer(req.Body(), e.prefer)
	if err != nil {
		e.log.Info("call refused", "remote", req.Source(), "reason", err.Error())
		e.respond(req, tx, 488, "Not Acceptable Here", sip.NewHeader("Warning", fmt.Sprintf("399 voxhost %q", err.Error())))
		return
	}
	route, err := e.route(req, trunk)
	if err != nil {
		e.respond(req, tx, 404, "Not Found", sip.NewHeader("Warning", fmt.Sprintf("399 voxhost %q", err.Error())))
		return
	}
	params := callParams(req)
	adm, refusal := e.srv.Admit(protocol{format: o.format}, route, params, req.Source())
	if refusal != nil {
		code, reason := 503, "Service Unavailable"
		switch {
		case refusal.UnknownRoute():
			code, reason = 404, "Not Found"
		case refusal.Reason == "capacity":
			code, reason = 486, "Busy Here"
		case refusal.Reason == "bad_query":
			code, reason = 400, "Bad Request"
		}
		hdrs := []sip.Header{sip.NewHeader("Warning", fmt.Sprintf("399 voxhost %q", refusal.Message))}
		if refusal.RetryAfter > 0 {
			hdrs = append(hdrs, sip.NewHeader("Retry-After", strconv.Itoa(int(refusal.RetryAfter.Seconds()))))
		}
		e.log.Info("call refused", "remote", req.Source(), "route", route, "reason", refusal.Message)
		e.respond(req, tx, code, reason, hdrs...)
		return
	}
	md, err := newMedia(e.m, ports, o.format, o.pt, o.eventPT, e.cfg.JitterMax, e.cfg.MediaTimeout)
	if err != nil {
		adm.Abandon()
		e.log.Warn("call refused", "remote", req.Source(), "reason", err.Error())
		e.respond(req, tx, 503, "Service Unavailable", sip.NewHeader("Retry-After", "1"))
		return
	}
	dialog, err := dua.ReadInvite(req, tx)
	if err != nil {
		adm.Abandon()
		md.shutdown()
		e.respond(req, tx, 400, "Bad Request")
		return
	}
	local := netip.AddrPortFrom(e.mediaAddr(from), uint16(md.port))
	c := &call{dialog: dialog, media: md, offer: o, local: local, sdpVer: 1}
	log := e.log.With("call", adm.CallID(), "sip_call_id", req.CallID().Value(), "remote", req.Source())
	_ = dialog.Respond(180, "Ringing", nil)
	if ring := testRinging.Load(); ring != nil {
		(*ring)(tx.Done())
	}
	res := sip.NewSDPResponseFromRequest(dialog.InviteRequest, answer(o, local, uint64(t0.UnixNano()), c.sdpVer))
	e.refresh(c, req, res)
	e.mu.Lock()
	e.calls[dialog.ID] = c
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.calls, dialog.ID)
		e.mu.Unlock()
	}()
	md.start(o, from, func(reason string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := dialog.Bye(ctx); err != nil {
			log.Info("BYE not answered", "err", err, "reason", reason)
		}
	})
	if err := dialog.WriteResponse(res); err != nil {
		// Cancelled before the answer, or never acknowledged.
		adm.Abandon()
		md.shutdown()
		code := "487"
		if !errors.Is(err, sip.ErrTransactionCanceled) && tx.Err() == nil {
			code = "no_ack"
		}
		e.m.responses.WithLabelValues(code).Inc()
		log.Info("call not set up", "reason", err.Error())
		return
	}
	e.m.responses.WithLabelValues("200").Inc()
	e.m.setup.Observe(time.Since(t0).Seconds())
	log.Info("SIP call answered", "route", route, "codec", o.format.String(), "telephone_events", o.eventPT != 0, "rtp", local.String(),
		"peer_rtp", o.remote.String())
	adm.Serve(md)
	st := md.shutdown()
	why := "bye from the peer or the host"
	if st.Failure != nil {
		why = st.Failure.Error()
	}
	log.Info("SIP call media", "ended", why, "packets", st.Received, "lost", st.Lost, "late", st.Late, "reordered", st.Reordered,
		"duplicates", st.Duplicates, "concealed", st.Concealed, "drained", st.Drained, "ignored", st.Ignored,
		"jitter_ms", st.Jitter/8, "buffer_ms", meanDepthMs(st.jitterStats),
		"peer_lost_percent", st.PeerLostPercent, "peer_jitter_ms", st.PeerJitterMs, "rtcp_reports", st.PeerReports)
	_ = dialog.Close()
}

func meanDepthMs(st jitterStats) float64 {
	if st.Played == 0 {
		return 0
	}
	return float64(st.DepthFrames) / float64(st.Played) * frameMs
}

// reinvite answers an in-dialog INVITE: hold, resume, a new address, a
// session refresh.
func (e *Endpoint) reinvite(req *sip.Request, tx sip.ServerTransaction) {
	c := e.lookup(req)
	if c == nil {
		e.respond(req, tx, 481, "Call/Transaction Does Not Exist")
		return
	}
	if err := c.dialog.ReadRequest(req, tx); err != nil {
		e.respond(req, tx, 500, "Server Internal Error")
		return
	}
	o := c.offer
	if len(req.Body()) > 0 {
		no, err := parseOffer(req.Body(), []uint8{c.offer.pt})
		if err != nil {
			e.respond(req, tx, 488, "Not Acceptable Here", sip.NewHeader("Warning", fmt.Sprintf("399 voxhost %q", err.Error())))
			return
		}
		if no.eventPT == 0 {
			no.eventPT = c.offer.eventPT
		}
		o = no
	}
	c.mu.Lock()
	c.offer = o
	c.sdpVer++
	body := answer(o, c.local, uint64(c.local.Port()), c.sdpVer)
	c.mu.Unlock()
	c.media.update(o, source(req))
	res := sip.NewSDPResponseFromRequest(req, body)
	res.AppendHeader(&sip.ContactHeader{Address: c.dialog.InviteResponse.Contact().Address})
	e.refresh(c, req, res)
	_ = tx.Respond(res)
}

// route picks the route of an INVITE: the X-Voxhost-Route header (which
// must name a route), else the Request-URI's user part if it names one,
// else the trunk's, else sip.route, else the default ("").
func (e *Endpoint) route(req *sip.Request, trunk *trunk) (string, error) {
	names, _ := e.srv.Routes()
	has := func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
	if h := req.GetHeader(routeHeader); h != nil {
		if v := strings.TrimSpace(h.Value()); v != "" {
			if !has(v) {
				return "", fmt.Errorf("unknown route %q in %s", v, routeHeader)
			}
			return v, nil
		}
	}
	if u := req.Recipient.User; u != "" && has(u) {
		return u, nil
	}
	if trunk.Route != "" {
		return trunk.Route, nil
	}
	return e.cfg.Route, nil
}

// callParams are the call's parameters: every X- header but the route's,
// named in lower case without the X- and with _ for -, and the caller's
// and callee's user parts and the SIP Call-ID.
func callParams(req *sip.Request) map[string]string {
	p := map[string]string{}
	for _, h := range req.Headers() {
		name := h.Name()
		if len(name) < 3 || !strings.EqualFold(name[:2], "x-") || strings.EqualFold(name, routeHeader) {
			continue
		}
		p[strings.ReplaceAll(strings.ToLower(name[2:]), "-", "_")] = h.Value()
	}
	if f := req.From(); f != nil {
		p["sip_from"] = f.Address.User
	}
	if t := req.To(); t != nil {
		p["sip_to"] = t.Address.User
	}
	if id := req.CallID(); id != nil {
		p["sip_call_id"] = id.Value()
	}
	return p
}

// mediaAddr is the address the SDP advertises to a peer at peer:
// sip.external_address, else the host's address on the route to it.
func (e *Endpoint) mediaAddr(peer netip.Addr) netip.Addr {
	if a, err := netip.ParseAddr(e.cfg.ExternalAddress); err == nil {
		return a
	}
	// A UDP "connection" sends nothing: it asks the kernel which local
	// address routes to the peer.
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(peer, 9)))
	if err != nil {
		return netip.IPv4Unspecified()
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
}

// errorsOnly passes on a handler's records of level error and above.
type errorsOnly struct{ slog.Handler }

func (h errorsOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError && h.Handler.Enabled(ctx, l)
}

func (h errorsOnly) WithAttrs(a []slog.Attr) slog.Handler { return errorsOnly{h.Handler.WithAttrs(a)} }

func (h errorsOnly) WithGroup(g string) slog.Handler { return errorsOnly{h.Handler.WithGroup(g)} }
