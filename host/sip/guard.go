package sip

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/icholy/digest"

	"github.com/voxhost/voxhost/host/config"
)

// realm is the digest realm the host challenges with.
const realm = "voxhost"

// nonceLife is how long a digest nonce is good for.
const nonceLife = 5 * time.Minute

// maxSources bounds the sources the rate limiter tracks; past it, the
// oldest buckets are forgotten (a scan from many addresses cannot make it
// grow without end).
const maxSources = 65536

type trunk struct {
	name     string
	prefixes []netip.Prefix
	config.SIPTrunk
	rate, burst float64
}

// guard is what stands between the internet and the SIP stack: the
// per-source rate limit (a trunk's, or strangers') and header bound on
// every datagram, before it is parsed; the trunks' source allow-lists and digest credentials on every
// request.
type guard struct {
	m      *metrics
	trunks []trunk
	rate   float64
	burst  float64
	maxHdr int
	key    [32]byte

	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newGuard(cfg config.SIP, m *metrics) *guard {
	g := &guard{m: m, rate: float64(cfg.RatePerSecond), burst: float64(cfg.Burst), maxHdr: cfg.MaxHeaders, buckets: map[netip.Addr]*bucket{}}
	for name, t := range cfg.Trunks {
		rate, burst := t.Rate()
		g.trunks = append(g.trunks, trunk{name: name, prefixes: t.Prefixes(), SIPTrunk: t, rate: float64(rate), burst: float64(burst)})
	}
	_, _ = rand.Read(g.key[:])
	return g
}

// trunk is the trunk whose sources hold a, or nil.
func (g *guard) trunk(a netip.Addr) *trunk {
	for i := range g.trunks {
		for _, p := range g.trunks[i].prefixes {
			if p.Contains(a) {
				return &g.trunks[i]
			}
		}
	}
	return nil
}

// filter is the transport's read filter: it drops, unanswered, a message
// from a source past its rate or a datagram with more header lines than
// sip.max_headers. An empty result drops; an error would stop the
// listener, so it never returns one.
func (g *guard) filter(info sip.TransportReadProps, data []byte) ([]byte, error) {
	if ap, err := netip.ParseAddrPort(addrString(info.RemoteAddr)); err == nil && !g.allow(ap.Addr().Unmap(), time.Now()) {
		g.m.dropped.WithLabelValues("rate_limited").Inc()
		return nil, nil
	}
	if info.Transport == "udp" && headerLines(data) > g.maxHdr {
		g.m.dropped.WithLabelValues("too_many_headers").Inc()
		return nil, nil
	}
	return data, nil
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// headerLines counts the lines of a message's header, up to the blank
// line. Keep-alives (a bare CRLF) have none.
func headerLines(data []byte) int {
	head, _, _ := bytes.Cut(data, []byte("\r\n\r\n"))
	return bytes.Count(head, []byte("\n"))
}

// allow takes a token of a's bucket: its trunk's rate, or strangers'.
func (g *guard) allow(a netip.Addr, now time.Time) bool {
	rate, burst := g.rate, g.burst
	if t := g.trunk(a); t != nil {
		rate, burst = t.rate, t.burst
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.buckets[a]
	if b == nil {
		if len(g.buckets) >= maxSources {
			for k, v := range g.buckets {
				if now.Sub(v.last) > time.Minute || len(g.buckets) >= maxSources {
					delete(g.buckets, k)
				}
			}
		}
		b = &bucket{tokens: burst, last: now}
		g.buckets[a] = b
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// challenge is a WWW-Authenticate value with a fresh nonce: the time it
// was made and a MAC of it, so that the host keeps no state per
// challenge.
func (g *guard) challenge() string {
	return fmt.Sprintf(`Digest realm="%s", nonce="%s", algorithm=MD5`, realm, g.nonce(time.Now()))
}

func (g *guard) nonce(t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 16)
	mac := hmac.New(sha256.New, g.key[:])
	mac.Write([]byte(ts))
	return ts + "." + hex.EncodeToString(mac.Sum(nil)[:12])
}

// freshNonce says whether n is one of ours and young enough.
func (g *guard) freshNonce(n string, now time.Time) bool {
	i := bytes.IndexByte([]byte(n), '.')
	if i < 0 {
		return false
	}
	secs, err := strconv.ParseInt(n[:i], 16, 64)
	if err != nil {
		return false
	}
	t := time.Unix(secs, 0)
	if now.Sub(t) > nonceLife || t.After(now.Add(time.Minute)) {
		return false
	}
	return hmac.Equal([]byte(g.nonce(t)), []byte(n))
}

// authorized checks req's Authorization against the trunk's credentials
// (RFC 2617 MD5, with or without qop=auth).
func (g *guard) authorized(req *sip.Request, t *trunk) bool {
	h := req.GetHeader("Authorization")
	if h == nil {
		return false
	}
	cr, err := digest.ParseCredentials(h.Value())
	if err != nil || cr.Username != t.Username || cr.Realm != realm || !g.freshNonce(cr.Nonce, time.Now()) {
		return false
	}
	ha1 := md5hex(t.Username + ":" + realm + ":" + t.Password.Reveal())
	ha2 := md5hex(string(req.Method) + ":" + cr.URI)
	want := md5hex(ha1 + ":" + cr.Nonce + ":" + ha2)
	if cr.QOP == "auth" {
		want = md5hex(ha1 + ":" + cr.Nonce + ":" + fmt.Sprintf("%08x", cr.Nc) + ":" + cr.Cnonce + ":auth:" + ha2)
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(cr.Response)) == 1
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
