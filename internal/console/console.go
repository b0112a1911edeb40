// Package console serves voxhost's browser console: a page that places a
// call from the microphone over the raw protocol and plays back what comes
// back, draws the plugins' events over the waveforms of both directions
// and, from the host's tap of the call (GET /calls/{id}/tap), the far-end
// reference and the inbound stages' output, shows each plugin's cost per
// frame and the live calls (any of which it can watch the same way), and
// runs an uploaded file through a route as voxhost run would.
//
// The page is static (embedded plain JavaScript modules, no build step)
// and holds no data, so it is served to anyone who can reach the listener;
// everything it shows comes from an API behind a bearer token the page asks
// for once and keeps in the tab's sessionStorage: the admin API on the
// admin listener, or with console: true the console API on the main one. A
// browser cannot put a header on a WebSocket, so a call is placed with a
// ticket instead: POST /console/tickets (behind the token) answers a random
// single-use ticket that expires in TicketTTL, and GET /console/call
// ?ticket=T upgrades to the server's raw endpoint. The token itself never
// appears in a URL, where proxies and logs would keep it.
package console

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
)

//go:embed static
var static embed.FS

// TicketTTL is how long a ticket may wait for its call.
const TicketTTL = 30 * time.Second

// maxTickets bounds the tickets kept at once (unused and recently used
// ones): a client that asks for more is refused until some expire.
const maxTickets = 1024

// maxTicketsPerOwner bounds the tickets one token (or, on a listener
// without tokens, one source address) holds at once, used ones that are
// still kept included: without it one call token could take every ticket
// of maxTickets and lock the console out for everyone else for TicketTTL.
// A person at the console places one call at a time; 64 in 30 s is a lot
// of them.
const maxTicketsPerOwner = 64

// refusalBytes is how much of a refused call's answer is kept for the
// page.
const refusalBytes = 1024

// Options configure a Console.
type Options struct {
	// Server runs the console's calls through its raw protocol's
	// CallHandler, admitted and limited as every other call.
	Server *server.Server
	// CallToken is the bearer token the console presents to the call
	// endpoint for a call placed with a ticket: one of auth.tokens, or
	// empty when calls need none.
	CallToken string
	// API is the path the page sends its API requests to: "/" for the
	// admin API on its listener, "/console/api/" for the console API on
	// the main one.
	API string
	// Token says which token the page asks for, as a person reads it:
	// "admin token (admin.tokens)".
	Token string
	// AllCalls says whether the API lists every live call (GET /calls),
	// and so whether the page shows the list; without it the page shows
	// its own call only (GET /calls/{id}).
	AllCalls bool
	// Owner says whom a ticket request is counted against for
	// maxTicketsPerOwner; nil means TokenOwner, which is right behind a
	// listener whose tokens protect the tickets. Behind one without
	// tokens, where anyone may send any Authorization header, use
	// AddressOwner.
	Owner func(*http.Request) string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// TokenOwner counts a ticket against the request's bearer token (the
// protecting middleware has checked it), or its source address when it
// sent none.
func TokenOwner(r *http.Request) string {
	if scheme, rest, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return "token " + strings.TrimSpace(rest)
	}
	return AddressOwner(r)
}

// AddressOwner counts a ticket against the request's source address.
func AddressOwner(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "address " + host
}

// Console serves the page, its tickets and its calls.
type Console struct {
	opts Options
	call http.Handler
	// pages are the page for a listener without tokens ([false]) and
	// for one with ([true]).
	pages [2][]byte
	files fs.FS

	mu      sync.Mutex
	tickets map[string]*ticket
	now     func() time.Time
}

// ticket is a call the page may place once.
type ticket struct {
	// owner is whom the ticket counts against (Options.Owner).
	owner   string
	expires time.Time
	used    bool
	// refused is the answer of a call the server refused before the
	// upgrade, kept for the page, which cannot read it from a WebSocket.
	refused *Refusal
}

// Refusal is how the server refused a call: its HTTP status and answer.
type Refusal struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
}

// New makes a console.
func New(opts Options) (*Console, error) {
	if opts.Server == nil {
		return nil, fmt.Errorf("console: no server")
	}
	if opts.API == "" {
		opts.API = "/"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Owner == nil {
		opts.Owner = TokenOwner
	}
	files, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		return nil, err
	}
	var pages [2][]byte
	for i, needsToken := range []bool{false, true} {
		if pages[i], err = page(index, opts, needsToken); err != nil {
			return nil, err
		}
	}
	return &Console{
		opts:    opts,
		call:    opts.Server.CallHandler(transport.Raw()),
		pages:   pages,
		files:   files,
		tickets: map[string]*ticket{},
		now:     time.Now,
	}, nil
}

// Handler serves, under /console/:
//
//	GET  /console/                  the page (and its assets): no token, no data
//	POST /console/tickets           behind protect: a ticket for one call
//	GET  /console/tickets/{ticket}  behind protect: whether the ticket's call was refused, and why
//	GET  /console/call?ticket=T     the server's raw endpoint (?pipeline=, ?codec=, ?rate=, ?call_id=)
//
// protect is the listener's bearer-token check (admin.RequireBearer).
// When it refuses a request without a token, the page asks for the token
// before its first API request.
func (c *Console) Handler(protect func(http.Handler) http.Handler) http.Handler {
	index := c.pages[0]
	if !passesWithoutToken(protect) {
		index = c.pages[1]
	}
	mux := http.NewServeMux()
	mux.Handle("POST /console/tickets", protect(http.HandlerFunc(c.issue)))
	mux.Handle("GET /console/tickets/{ticket}", protect(http.HandlerFunc(c.status)))
	mux.HandleFunc("GET /console/call", c.placeCall)
	mux.HandleFunc("GET /console/{$}", func(w http.ResponseWriter, _ *http.Request) {
		secure(w.Header())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(index)
	})
	mux.Handle("GET /console/", http.StripPrefix("/console/", c.assets()))
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	})
	return mux
}

// secure sets the headers every answer of the console carries: no script,
// style or connection from anywhere but the listener itself, no framing,
// and no caching of a page that may change with the binary.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}

// page is the page with its settings, as JSON in a non-executable script
// element (the content security policy allows no inline script).
// needsToken says whether the page must ask for a token before its first
// request: it sends none it knows would be refused, which a browser logs
// as an error.
func page(index []byte, opts Options, needsToken bool) ([]byte, error) {
	settings, err := json.Marshal(map[string]any{"api": opts.API, "token": opts.Token, "all_calls": opts.AllCalls, "needs_token": needsToken})
	if err != nil {
		return nil, err
	}
	settings = bytes.ReplaceAll(settings, []byte("<"), []byte(`\u003c`))
	return bytes.Replace(index, []byte("{{settings}}"), settings, 1), nil
}

// passesWithoutToken says whether protect lets a request that carries no
// token through, as it does on a listener without tokens.
func passesWithoutToken(protect func(http.Handler) http.Handler) bool {
	passed := false
	probe := protect(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }))
	probe.ServeHTTP(discardWriter{http.Header{}}, &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/console/tickets"}, Header: http.Header{}})
	return passed
}

// discardWriter is an answer nobody reads.
type discardWriter struct{ header http.Header }

func (d discardWriter) Header() http.Header         { return d.header }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}

func (c *Console) assets() http.Handler {
	files := http.FileServerFS(c.files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secure(w.Header())
		if strings.HasSuffix(r.URL.Path, ".js") {
			// Module scripts and worklets must be served as JavaScript.
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		}
		files.ServeHTTP(w, r)
	})
}

// issue answers a new ticket.
func (c *Console) issue(w http.ResponseWriter, r *http.Request) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	owner := c.opts.Owner(r)
	c.mu.Lock()
	now := c.now()
	mine := 0
	for k, t := range c.tickets {
		switch {
		case now.After(t.expires):
			delete(c.tickets, k)
		case t.owner == owner:
			mine++
		}
	}
	full, yours := len(c.tickets) >= maxTickets, mine >= maxTicketsPerOwner
	if !full && !yours {
		c.tickets[id] = &ticket{owner: owner, expires: now.Add(TicketTTL)}
	}
	c.mu.Unlock()
	if full || yours {
		w.Header().Set("Retry-After", fmt.Sprint(int(TicketTTL.Seconds())))
		msg := fmt.Sprintf("%d console tickets are waiting for their calls: try again once they expire", maxTickets)
		if yours {
			msg = fmt.Sprintf("this token holds %d console tickets, the most one may: try again once they expire", maxTicketsPerOwner)
		}
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": msg})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"ticket": id, "expires_in_ms": TicketTTL.Milliseconds()})
}

// status answers what became of a ticket.
func (c *Console) status(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	t, ok := c.tickets[r.PathValue("ticket")]
	var used bool
	var refused *Refusal
	if ok {
		used, refused = t.used, t.refused
	}
	c.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such ticket: it expired, or was never issued"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"used": used, "refused": refused})
}

// take uses up a ticket, or says why it cannot be used.
func (c *Console) take(id string) (*ticket, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tickets[id]
	switch {
	case id == "":
		return nil, "no ticket: ask POST /console/tickets for one, with the token, and pass it as ?ticket="
	case !ok || c.now().After(t.expires):
		return nil, "unknown or expired ticket: ask POST /console/tickets for a new one"
	case t.used:
		return nil, "the ticket was used already: each call needs a new one"
	}
	t.used = true
	// The record stays a while, for the page to ask why a call was
	// refused.
	t.expires = c.now().Add(TicketTTL)
	return t, ""
}

// placeCall hands a ticketed request to the server's raw endpoint, with
// the call token in place of the ticket.
func (c *Console) placeCall(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	t, why := c.take(q.Get("ticket"))
	if t == nil {
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	// The ticket is not the call's: the server keeps the query as the
	// call's parameters, which may reach a bot's URL.
	q.Del("ticket")
	q.Del("token")
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	r2.Header.Del("Authorization")
	if c.opts.CallToken != "" {
		r2.Header.Set("Authorization", "Bearer "+c.opts.CallToken)
	}
	rec := &recorder{ResponseWriter: w}
	c.call.ServeHTTP(rec, r2)
	if rec.status != 0 && rec.status != http.StatusSwitchingProtocols {
		c.mu.Lock()
		t.refused = &Refusal{Status: rec.status, Error: strings.TrimSpace(rec.body.String())}
		c.mu.Unlock()
		c.opts.Logger.Info("console call refused", "status", rec.status, "reason", t.refused.Error, "remote", r.RemoteAddr)
	}
}

// recorder keeps the status and the start of the body of an answer that
// is not an upgrade. The WebSocket library reaches the connection through
// Unwrap.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if n := refusalBytes - r.body.Len(); n > 0 {
		r.body.Write(b[:min(n, len(b))])
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap returns the connection's own writer, for http.ResponseController
// and the WebSocket library's hijack.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
