package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/recording"
	"github.com/voxhost/voxhost/host/transport"
)

// Route is what a call runs: the inbound pipeline for the caller's audio
// and, when the route has an upstream, the bot the result goes to and the
// outbound pipeline the bot's answer comes back through. Without an
// upstream the route is an echo: the caller hears its own audio after the
// inbound and then the outbound pipeline.
type Route struct {
	// Name names the route in URLs (?pipeline=), logs and metrics.
	Name string
	// Inbound processes the caller's audio. It is required.
	Inbound *pipeline.Definition
	// Outbound processes what the caller hears; nil passes it unchanged.
	Outbound *pipeline.Definition
	// Upstream is the bot the call is relayed to; nil makes an echo.
	Upstream *Upstream
	// OverQuota is what happens to a call of the route whose plugins use
	// more than Options.CallCPUShare of a core.
	OverQuota QuotaPolicy
	// Recording records its calls; nil records nothing.
	Recording *recording.Spec
}

// Upstream is the bot leg of a route: where to dial and how to speak.
type Upstream struct {
	// URL is a ws:// or wss:// URL template (transport.ExpandURL): the
	// call's ids and custom parameters may be placed in it.
	URL string
	// Dialect is the protocol spoken to the bot.
	Dialect transport.Dialect
	// Format is the bot leg's audio both ways. The inbound pipeline must
	// end at its rate and the outbound pipeline start there.
	Format codec.Format
	// Header is sent with the dial (values already read from the
	// environment).
	Header http.Header
	// Options are the dialect's own settings (transport.CheckOptions).
	Options map[string]string
	// ConnectTimeout caps the dial and WebSocket handshake, the fetch of a
	// signed URL before it (transport.URLSigner) and, again, the wait for
	// a provider's acknowledgement of the session set-up after it
	// (transport.SetupAcknowledger); 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// OnFailure says what a call does when the bot cannot be reached.
	OnFailure FailurePolicy
}

// DefaultConnectTimeout is Upstream.ConnectTimeout's default.
const DefaultConnectTimeout = 3 * time.Second

// FailurePolicy says what a call does when its bot cannot be reached.
type FailurePolicy int

const (
	// FailEnd ends the call with the reason.
	FailEnd FailurePolicy = iota
	// FailEcho goes on as an echo through the route's pipelines, so the
	// caller is not cut off while the bot is down.
	FailEcho
)

// String names the policy as configs spell it.
func (p FailurePolicy) String() string {
	if p == FailEcho {
		return "echo"
	}
	return "end_call"
}

// ParseFailurePolicy reads a policy as configs spell it ("end_call", "echo").
func ParseFailurePolicy(s string) (FailurePolicy, error) {
	switch s {
	case "", "end_call":
		return FailEnd, nil
	case "echo":
		return FailEcho, nil
	}
	return 0, fmt.Errorf("unknown on_failure policy %q (want end_call or echo)", s)
}

// EchoRoutes makes an echo route of each pipeline definition, named as
// the definition: what a program that only processes audio serves.
func EchoRoutes(defs map[string]*pipeline.Definition) map[string]*Route {
	routes := make(map[string]*Route, len(defs))
	for name, d := range defs {
		routes[name] = &Route{Name: name, Inbound: d}
	}
	return routes
}

// check says why the route cannot run, or nil.
func (r *Route) check() error {
	if r.Inbound == nil {
		return fmt.Errorf("route %s has no inbound pipeline", r.Name)
	}
	if r.Recording != nil {
		if err := r.Recording.Check(); err != nil {
			return fmt.Errorf("route %s: %w", r.Name, err)
		}
	}
	if u := r.Upstream; u != nil {
		if u.Dialect == nil {
			return fmt.Errorf("route %s: upstream without a protocol", r.Name)
		}
		if err := transport.CheckURLTemplate(u.URL); err != nil {
			return fmt.Errorf("route %s: %w", r.Name, err)
		}
		if err := u.Dialect.CheckFormat(u.Format); err != nil {
			return fmt.Errorf("route %s: upstream %s: %w", r.Name, u.Dialect.Name(), err)
		}
		if err := transport.CheckOptions(u.Dialect, u.Options); err != nil {
			return fmt.Errorf("route %s: upstream: %w", r.Name, err)
		}
	}
	return nil
}
