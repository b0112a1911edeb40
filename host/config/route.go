package config

import (
	"fmt"
	"log/slog"
	"maps"
	"net/textproto"
	"os"
	"slices"
	"strings"
	"time"
)

// Route is one entry of pipelines: what a call that asks for it runs. A
// route with an upstream relays the call to a voice bot: the caller's audio
// goes through Inbound to the bot, the bot's answer through Outbound to the
// caller. Without one it is an echo: the caller hears its own audio after
// Inbound and then Outbound.
type Route struct {
	// Inbound are the stages the caller's audio runs through; at least one.
	Inbound []Stage
	// Outbound are the stages of what the caller hears; none passes it on
	// unchanged.
	Outbound []Stage
	// Upstream is the bot calls are relayed to; nil makes an echo.
	Upstream *Upstream
	// OverQuota is what happens to a call whose plugins use more than
	// limits.call_cpu_share of a core: OverQuotaBypass (also "") or
	// OverQuotaEndCall.
	OverQuota string
	// Recording records the route's calls; nil records nothing.
	Recording *Recording

	// listed says the file wrote the route as a bare list of stages, so
	// that errors name them as it does: pipelines.NAME[i], not
	// pipelines.NAME.inbound[i].
	listed bool
}

// Stage is one stage of a route's pipeline, as the file writes it. It has
// the fields of host/pipeline's StageSpec, in the same order, which
// documents them and which internal/app converts it into.
type Stage struct {
	// Plugin names a stock plugin, a NAME.wasm in plugins_dir or a path
	// to a .wasm file.
	Plugin string
	// Config is the plugin's configuration object, as vox_init receives
	// it in JSON.
	Config map[string]any
	// OnError is the stage's failure policy: "bypass" (also "") or
	// "end_call".
	OnError string
	// BudgetMs caps each call into the plugin, in milliseconds; 0 means
	// the host's default.
	BudgetMs int
}

// Upstream is the bot leg of a route: where voxhost dials and how it speaks
// to the bot.
type Upstream struct {
	// URL is a ws:// or wss:// URL template; {call_id}, {stream_id},
	// {account_id}, {route} and {param.NAME} are filled in for each call
	// (host/transport's CheckURLTemplate).
	URL string
	// Protocol names the dialect spoken to the bot, one of host/transport's
	// DialectNames.
	Protocol string
	// Codec and Rate are the bot leg's audio as host/codec's ParseFormat
	// reads them; empty and 0 mean μ-law and the codec's own rate.
	Codec string
	Rate  int
	// Headers are sent with the dial, by name as the file spells it. The
	// file's values may hold ${VAR}, read from the environment when the file
	// is loaded (Parse): credentials need not be written into it. Every
	// value is a Secret, whether or not it came from the environment.
	Headers map[string]Secret
	// Options are the dialect's own settings (host/transport's
	// CheckOptions).
	Options map[string]string
	// ConnectTimeout caps the dial and the WebSocket handshake; 0 means
	// the server's default.
	ConnectTimeout time.Duration
	// OnFailure is what a call does when the bot cannot be reached:
	// OnFailureEndCall (also "") or OnFailureEcho.
	OnFailure string
}

// The values of Route.OverQuota.
const (
	// OverQuotaBypass bypasses the call's costliest plugin, one at a
	// time, and ends the call when none is left to bypass.
	OverQuotaBypass = "bypass_costliest"
	// OverQuotaEndCall ends the call, with the reason in its close frame.
	OverQuotaEndCall = "end_call"
)

// The values of Upstream.OnFailure.
const (
	// OnFailureEndCall ends the call with the reason.
	OnFailureEndCall = "end_call"
	// OnFailureEcho goes on as an echo through the route's stages, so the
	// caller is not cut off while the bot is down.
	OnFailureEcho = "echo"
)

// Secret is a value that must not be shown: an upstream header, which
// carries credentials. It prints, logs and marshals as "[redacted]", so that
// no %v of a Config, log line or JSON answer can leak it; Reveal returns
// it. The zero Secret is the empty string.
type Secret struct{ value string }

// NewSecret wraps s.
func NewSecret(s string) Secret { return Secret{s} }

// Reveal returns the value, for the one place that sends it.
func (s Secret) Reveal() string { return s.value }

const redacted = "[redacted]"

// String hides the value.
func (Secret) String() string { return redacted }

// GoString hides the value from %#v.
func (Secret) GoString() string { return redacted }

// LogValue hides the value from log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText hides the value from encoding/json and other encoders.
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// validate checks the route at key path at, asking ch (nil: nothing)
// about its stages and upstream.
func (r *Route) validate(at string, ch Checker) error {
	in := at + ".inbound"
	if r.listed {
		in = at
	}
	if len(r.Inbound) == 0 {
		if r.listed {
			return invalid(at, "no stages; list at least one plugin")
		}
		return invalid(in, "no stages; list at least one plugin (passthrough passes the caller's audio on unchanged)")
	}
	switch r.OverQuota {
	case "", OverQuotaBypass, OverQuotaEndCall:
	default:
		return invalid(at+".over_quota", "unknown over_quota policy %q (want %s or %s)", r.OverQuota, OverQuotaBypass, OverQuotaEndCall)
	}
	if err := validateStages(in, r.Inbound, ch); err != nil {
		return err
	}
	if err := validateStages(at+".outbound", r.Outbound, ch); err != nil {
		return err
	}
	if r.Recording != nil {
		if err := r.Recording.validate(at + ".recording"); err != nil {
			return err
		}
	}
	if r.Upstream != nil {
		return r.Upstream.validate(at+".upstream", ch)
	}
	return nil
}

// validate checks the upstream at key path at, asking ch (nil: nothing)
// about the URL template, the protocol, the audio format and the options.
// Its errors name headers but never show their values.
func (u *Upstream) validate(at string, ch Checker) error {
	if u.URL == "" {
		return invalid(at+".url", "missing; give the bot's ws:// or wss:// URL")
	}
	if ch != nil {
		if key, err := ch.CheckUpstream(u); err != nil {
			return checked(at, key, err)
		}
	}
	if err := checkHeaders(at+".headers", u.Headers); err != nil {
		return err
	}
	if u.ConnectTimeout < 0 {
		return invalid(at+".connect_timeout", "must be positive, got %v", u.ConnectTimeout)
	}
	switch u.OnFailure {
	case "", OnFailureEndCall, OnFailureEcho:
	default:
		return invalid(at+".on_failure", "unknown on_failure policy %q (want %s or %s)", u.OnFailure, OnFailureEndCall, OnFailureEcho)
	}
	return nil
}

// handshakeHeaders are set by the WebSocket handshake itself (Host by
// net/http): a value configured for one would be dropped without a word.
var handshakeHeaders = []string{"Connection", "Host", "Sec-Websocket-Extensions", "Sec-Websocket-Key", "Sec-Websocket-Version", "Upgrade"}

func checkHeaders(at string, headers map[string]Secret) error {
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		at := join(at, name)
		if !isToken(name) {
			return invalid(at, "%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~ only)", name)
		}
		canonical := textproto.CanonicalMIMEHeaderKey(name)
		if slices.Contains(handshakeHeaders, canonical) {
			return invalid(at, "the WebSocket handshake sets %s itself", canonical)
		}
		if other, dup := seen[canonical]; dup {
			return invalid(at, "header %s is given twice, also as %s (header names ignore case)", name, other)
		}
		seen[canonical] = name
		if strings.ContainsFunc(headers[name].value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return invalid(at, "the value holds a line break or another control character, which a header cannot carry (the value is not shown)")
		}
	}
	return nil
}

// isToken says whether s is an HTTP token (RFC 9110 section 5.6.2), which
// a header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// expandEnv replaces each ${NAME} in s with the environment variable NAME,
// which must be set and not empty: a header sent as "Bearer " would fail at
// every call's dial rather than at start-up. Its errors name the variable
// but never show s, which may hold a credential itself.
func expandEnv(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("a ${ without its }: write ${NAME} to read the environment variable NAME")
		}
		name := s[i+2 : i+end]
		if !isEnvName(name) {
			return "", fmt.Errorf("a ${...} that does not hold a variable name: write ${NAME}, NAME of letters, digits and _")
		}
		v, ok := os.LookupEnv(name)
		switch {
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set (the value reads ${%s})", name, name)
		case v == "":
			return "", fmt.Errorf("environment variable %s is empty (the value reads ${%s})", name, name)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

func isEnvName(s string) bool {
	for i, c := range []byte(s) {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}
