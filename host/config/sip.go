package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// SIP is the SIP trunk endpoint: a user agent server on UDP and TCP that
// answers INVITEs from the configured trunks with RTP media. Calls it
// answers are calls like any other: routes, pipelines, bot legs, limits
// and drain are the server's.
type SIP struct {
	// Listen is the host:port the UAS listens on, UDP and TCP alike;
	// empty means no SIP endpoint.
	Listen string
	// ExternalAddress is the IP address the SDP and the Contact advertise,
	// for a host behind NAT or a load balancer; empty means the address
	// the INVITE arrived on.
	ExternalAddress string
	// RTPPortMin and RTPPortMax bound the UDP ports media is received on,
	// one port per call (and RTCP on the next, so each call takes an even
	// port and the odd one after it).
	RTPPortMin, RTPPortMax int
	// Route names the route of calls whose Request-URI user part and
	// X-Voxhost-Route header name none; empty means the default route.
	Route string
	// Codecs lists the codecs the answer may choose, preferred first:
	// "pcmu" and "pcma" (G.711 at 8 kHz).
	Codecs []string
	// MaxMessageBytes bounds one SIP message, headers and body.
	MaxMessageBytes int
	// MaxHeaders bounds the header lines of one SIP message.
	MaxHeaders int
	// RatePerSecond is how many SIP messages one source address that no
	// trunk lists may send a second, sustained; Burst how many at once.
	// Past it they are dropped unanswered and counted (below it they get
	// 403): a scanner gets little, and costs less.
	RatePerSecond, Burst int
	// JitterMax is the most delay the jitter buffer may add to absorb
	// late packets; it adapts below it.
	JitterMax time.Duration
	// SessionExpires is the RFC 4028 session interval answered when an
	// INVITE offers session timers (Session-Expires); a call the peer
	// does not refresh in it ends.
	SessionExpires time.Duration
	// MediaTimeout ends a call whose RTP stopped (no packet, and the call
	// not on hold) for this long: the peer vanished without a BYE.
	MediaTimeout time.Duration
	// Trunks are the peers allowed to place calls, by name. A request
	// from an address no trunk lists is refused with 403.
	Trunks map[string]SIPTrunk
}

// SIPTrunk is one peer allowed to place calls: the addresses it sends
// from and, optionally, the digest credentials it must answer with.
type SIPTrunk struct {
	// Sources are the CIDR prefixes (or single addresses) the trunk's
	// signalling comes from.
	Sources []string
	// Username and Password, when set, make every INVITE answer a digest
	// challenge (RFC 8760 MD5) first.
	Username string
	Password Secret
	// Route names the route of the trunk's calls when the request names
	// none; empty means sip.route.
	Route string
	// RatePerSecond and Burst bound the messages each of the trunk's
	// source addresses may send, as sip.rate_per_second does for
	// strangers; a trunk's edge sends every call from a few addresses,
	// so its default is higher (DefaultTrunkRate, twice that at once).
	RatePerSecond, Burst int
}

// DefaultTrunkRate is a trunk source's messages a second when its config
// says none: about 60 call set-ups a second (INVITE, ACK, BYE and a
// provisional's retransmission each).
const DefaultTrunkRate = 250

// Rate is the trunk's messages a second and burst per source, defaults
// filled in.
func (t SIPTrunk) Rate() (perSecond, burst int) {
	perSecond, burst = t.RatePerSecond, t.Burst
	if perSecond == 0 {
		perSecond = DefaultTrunkRate
	}
	if burst == 0 {
		burst = 2 * perSecond
	}
	return perSecond, burst
}

// DefaultSIP is the SIP endpoint's configuration before a file's keys:
// off, with the limits it gets once listen is set.
func DefaultSIP() SIP {
	return SIP{
		RTPPortMin:      20000,
		RTPPortMax:      20999,
		Codecs:          []string{"pcmu", "pcma"},
		MaxMessageBytes: 8192,
		MaxHeaders:      64,
		RatePerSecond:   20,
		Burst:           40,
		JitterMax:       100 * time.Millisecond,
		SessionExpires:  30 * time.Minute,
		MediaTimeout:    30 * time.Second,
	}
}

// Prefixes returns the trunk's sources as prefixes; Validate has checked
// them.
func (t SIPTrunk) Prefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(t.Sources))
	for _, s := range t.Sources {
		if p, err := parseSource(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// parseSource reads a CIDR prefix or a single address.
func parseSource(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// validate checks the SIP keys; routes names the configured pipelines.
func (s *SIP) validate(routes map[string]Route, otherListeners ...string) error {
	if s.Listen == "" {
		return nil
	}
	port, err := splitPort(s.Listen)
	if err != nil {
		return invalid("sip.listen", "%v; write host:port, e.g. \"0.0.0.0:5060\"", err)
	}
	for _, o := range otherListeners {
		if o == s.Listen && port != "0" {
			return invalid("sip.listen", "%q is also another listener's address; give SIP a port of its own", s.Listen)
		}
	}
	if a := s.ExternalAddress; a != "" && net.ParseIP(a) == nil {
		return invalid("sip.external_address", "%q is not an IP address; the SDP's c= line needs one", a)
	}
	switch {
	case s.RTPPortMin < 1024 || s.RTPPortMax > 65535 || s.RTPPortMin > s.RTPPortMax:
		return invalid("sip.rtp_port_min", "the RTP range %d-%d must lie within 1024-65535, min before max", s.RTPPortMin, s.RTPPortMax)
	case s.RTPPortMax-s.RTPPortMin < 1:
		return invalid("sip.rtp_port_max", "the RTP range %d-%d holds no RTP/RTCP pair; give it at least two ports", s.RTPPortMin, s.RTPPortMax)
	}
	if len(s.Codecs) == 0 {
		return invalid("sip.codecs", "lists no codec; give pcmu, pcma or both")
	}
	for i, c := range s.Codecs {
		if c != "pcmu" && c != "pcma" {
			return invalid(fmt.Sprintf("sip.codecs[%d]", i), "unknown codec %q; voxhost's SIP answers pcmu and pcma", c)
		}
	}
	switch {
	case s.MaxMessageBytes < 1024 || s.MaxMessageBytes > 65535:
		return invalid("sip.max_message_bytes", "must be within 1024-65535, got %d", s.MaxMessageBytes)
	case s.MaxHeaders < 16:
		return invalid("sip.max_headers", "must be at least 16 (an INVITE carries about 12), got %d", s.MaxHeaders)
	case s.RatePerSecond < 1:
		return invalid("sip.rate_per_second", "must be at least 1, got %d", s.RatePerSecond)
	case s.Burst < 1:
		return invalid("sip.burst", "must be at least 1, got %d", s.Burst)
	case s.JitterMax < 20*time.Millisecond || s.JitterMax > time.Second:
		return invalid("sip.jitter_max", "must be within 20ms-1s, got %v", s.JitterMax)
	case s.SessionExpires < 90*time.Second:
		return invalid("sip.session_expires", "must be at least 90s (RFC 4028's Min-SE), got %v", s.SessionExpires)
	case s.MediaTimeout < time.Second:
		return invalid("sip.media_timeout", "must be at least 1s, got %v", s.MediaTimeout)
	}
	if p := s.Route; p != "" {
		if _, ok := routes[p]; !ok {
			return invalid("sip.route", "unknown pipeline %q", p)
		}
	}
	if len(s.Trunks) == 0 {
		return invalid("sip.trunks", "lists no trunk; SIP is scanned all day, so name the addresses calls may come from (sources: [\"0.0.0.0/0\"] to take any)")
	}
	for name, t := range s.Trunks {
		at := "sip.trunks." + name
		if len(t.Sources) == 0 {
			return invalid(at+".sources", "lists no source address")
		}
		for i, src := range t.Sources {
			if _, err := parseSource(src); err != nil {
				return invalid(fmt.Sprintf("%s.sources[%d]", at, i), "%q is neither an address nor a CIDR prefix such as 203.0.113.0/24", src)
			}
		}
		if t.RatePerSecond < 0 || t.Burst < 0 {
			return invalid(at+".rate_per_second", "rate_per_second and burst must not be negative (0: the default)")
		}
		if (t.Username == "") != (t.Password.Reveal() == "") {
			return invalid(at+".username", "digest authentication needs both username and password")
		}
		if p := t.Route; p != "" {
			if _, ok := routes[p]; !ok {
				return invalid(at+".route", "unknown pipeline %q", p)
			}
		}
	}
	return nil
}

// sipFields decodes the sip mapping.
func sipFields(s *SIP) map[string]field {
	return map[string]field{
		"listen":            str(&s.Listen),
		"external_address":  str(&s.ExternalAddress),
		"rtp_port_min":      integer(&s.RTPPortMin),
		"rtp_port_max":      integer(&s.RTPPortMax),
		"route":             str(&s.Route),
		"codecs":            strs(&s.Codecs),
		"max_message_bytes": integer(&s.MaxMessageBytes),
		"max_headers":       integer(&s.MaxHeaders),
		"rate_per_second":   integer(&s.RatePerSecond),
		"burst":             integer(&s.Burst),
		"jitter_max":        duration(&s.JitterMax),
		"session_expires":   duration(&s.SessionExpires),
		"media_timeout":     duration(&s.MediaTimeout),
		"trunks": mapOf(&s.Trunks, func(t *SIPTrunk) field {
			return mapping(map[string]field{
				"sources":         strs(&t.Sources),
				"username":        str(&t.Username),
				"password":        secret(&t.Password),
				"route":           str(&t.Route),
				"rate_per_second": integer(&t.RatePerSecond),
				"burst":           integer(&t.Burst),
			})
		}),
	}
}
