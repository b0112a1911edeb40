// Package httpguard is what every HTTP listener of voxhost (the call
// listener and the admin API's) puts between the network and its
// handlers: timeouts and a header-size cap on each connection, a cap on
// the connections of one source address, a check of the Host header
// against the listener's names (DNS rebinding), and the refusal of
// cross-origin state changes (a web page posting to a loopback port).
//
// It is a leaf: the server and voxhost serve (internal/app) assemble it,
// the config package only parses the values. A program that embeds
// voxhost sets host/server's Options.HTTP with its Limits, and may put
// Hosts and SameOrigin in front of handlers of its own.
package httpguard

import (
	"log"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Limits bound what one connection of a listener may hold. A zero field
// means its default.
type Limits struct {
	// ReadHeaderTimeout is how long a client may take to send a request's
	// headers: a client that opens a connection and sends nothing (or a
	// byte a minute) would otherwise hold a goroutine and a descriptor.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client may take to send a whole request,
	// body included. It does not bound a WebSocket: net/http clears a
	// connection's deadlines when a handler hijacks it (the app's
	// TestCallsOutliveTheReadTimeout holds it to that).
	ReadTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers (net/http allows 4 KiB more
	// for its own reading); larger ones are answered 431.
	MaxHeaderBytes int
	// MaxConnsPerIP caps the open connections of one source address; a
	// connection over it is closed as soon as it is accepted. NoLimit
	// turns the cap off.
	MaxConnsPerIP int
}

// Defaults of Limits' zero fields.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout is time enough for the largest admin upload
	// (32 MiB) at 300 KiB/s.
	DefaultReadTimeout = 2 * time.Minute
	DefaultIdleTimeout = time.Minute
	// DefaultMaxHeaderBytes is a sixteenth of net/http's 1 MiB: the
	// clients voxhost serves (carriers' media streams, bots, the console,
	// curl) send a few hundred bytes of headers, and 64 KiB still takes a
	// long JWT in a cookie or an Authorization header.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConnsPerIP is the cap when none is given: a carrier or a
	// load balancer may send every call from one address.
	DefaultMaxConnsPerIP = 1024
	// NoLimit as MaxConnsPerIP turns the cap off.
	NoLimit = -1
)

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxConnsPerIP == 0 {
		l.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	return l
}

// Server returns an http.Server for handler with l's timeouts and header
// cap; errorLog may be nil.
func (l Limits) Server(handler http.Handler, errorLog *log.Logger) *http.Server {
	l = l.withDefaults()
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		ErrorLog:          errorLog,
	}
}

// Listener returns ln with l's cap on the connections of one source
// address; refused, if not nil, is called with the address of each
// connection closed for it (for a metric).
func (l Limits) Listener(ln net.Listener, refused func(net.Addr)) net.Listener {
	l = l.withDefaults()
	if l.MaxConnsPerIP < 0 {
		return ln
	}
	return &ipLimiter{Listener: ln, max: l.MaxConnsPerIP, refused: refused, open: map[string]int{}}
}

// ipLimiter counts the open connections of each source address.
type ipLimiter struct {
	net.Listener
	max     int
	refused func(net.Addr)

	mu   sync.Mutex
	open map[string]int
}

// Accept returns the next connection whose address is under the cap; the
// others are closed here, before net/http spends a goroutine on them.
func (l *ipLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := sourceIP(c.RemoteAddr())
		l.mu.Lock()
		ok := l.open[ip] < l.max
		if ok {
			l.open[ip]++
		}
		l.mu.Unlock()
		if ok {
			return &countedConn{Conn: c, l: l, ip: ip}, nil
		}
		_ = c.Close()
		if l.refused != nil {
			l.refused(c.RemoteAddr())
		}
	}
}

func (l *ipLimiter) done(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// sourceIP is the address's host without the port.
func sourceIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// countedConn gives its address's count back when it closes, once, by
// whoever closes it: net/http, or the WebSocket library that took it over.
type countedConn struct {
	net.Conn
	l    *ipLimiter
	ip   string
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.done(c.ip) })
	return err
}

// CloseWrite lets net/http half-close the connection as it does a bare
// TCP one, so that a client reads the whole answer before the close.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Hosts lets through the requests whose Host header names the listener at
// addr, and answers the others 403 naming key, the config key that lists
// more names. A name is allowed when it matches one of the patterns of
// allowed (path.Match, case-insensitive: "voice.example.com",
// "*.example.com") or is "localhost"; an IP address when it is a
// loopback one or the listener is not bound to loopback. With no patterns,
// a listener not bound to loopback takes every name (it cannot know its
// own), and one bound to loopback only loopback ones.
//
// That stops DNS rebinding, where a web page's own name is made to resolve
// to 127.0.0.1 so that the browser treats the page and the loopback
// listener as one origin: the browser still sends the page's name as Host.
// An IP literal cannot be rebound, so it is refused only where no client
// should be using one (a non-loopback address on a loopback listener).
// refused, if not nil, is called for each refusal (for a metric).
func Hosts(allowed []string, addr net.Addr, key string, refused func(), next http.Handler) http.Handler {
	loopback := false
	if ta, ok := addr.(*net.TCPAddr); ok {
		loopback = ta.IP.IsLoopback()
	}
	patterns := make([]string, len(allowed))
	for i, p := range allowed {
		patterns[i] = strings.ToLower(p)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hostAllowed(r.Host, patterns, loopback) {
			next.ServeHTTP(w, r)
			return
		}
		if refused != nil {
			refused()
		}
		http.Error(w, "Host "+quote(r.Host)+" is not a name of this listener: add it to "+key, http.StatusForbidden)
	})
}

// hostAllowed applies Hosts' rules to one Host header.
func hostAllowed(hostport string, patterns []string, loopback bool) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || !loopback
	}
	if host == "localhost" {
		return true
	}
	for _, p := range patterns {
		if ok, _ := path.Match(p, host); ok {
			return true
		}
	}
	return len(patterns) == 0 && !loopback
}

// quote shows a header value in an answer, cut short and escaped: it is
// the client's.
func quote(s string) string { return strconv.Quote(s[:min(len(s), 100)]) }

// SameOrigin refuses, with 403, a request that changes state (any method
// but GET, HEAD and OPTIONS) sent by a browser from another origin: its
// Sec-Fetch-Site says cross-site or same-site, or, from a browser that
// sends none, its Origin is not the Host it was sent to. A web page can
// send such a request to a loopback port without the reader's consent (a
// form, or fetch with a text/plain body, needs no CORS preflight); a
// client that is not a browser sends neither header and passes.
func SameOrigin(next http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "cross-origin request refused: a page of another origin ("+quote(r.Header.Get("Origin"))+") may not change this server's state", http.StatusForbidden)
	}))
	return p.Handler(next)
}
