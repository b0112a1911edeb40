package sip

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/voxhost/voxhost/host/config"
)

func testGuard(t *testing.T, trunks map[string]config.SIPTrunk) *guard {
	cfg := config.DefaultSIP()
	cfg.Trunks = trunks
	cfg.RatePerSecond, cfg.Burst = 10, 5
	return newGuard(cfg, newMetrics(prometheus.NewRegistry()))
}

// TestGuardTrunks: a source is let in by the trunk whose prefixes hold
// it, and by no other.
func TestGuardTrunks(t *testing.T) {
	g := testGuard(t, map[string]config.SIPTrunk{
		"twilio": {Sources: []string{"54.172.60.0/30"}, Route: "bot"},
		"pbx":    {Sources: []string{"10.0.0.5"}},
	})
	for addr, want := range map[string]string{"54.172.60.1": "twilio", "54.172.60.4": "", "10.0.0.5": "pbx", "10.0.0.6": "", "::1": ""} {
		got := ""
		if tr := g.trunk(netip.MustParseAddr(addr)); tr != nil {
			got = tr.name
		}
		if got != want {
			t.Errorf("%s: trunk %q, want %q", addr, got, want)
		}
	}
}

// TestGuardRateLimit: a source gets its burst, then its rate; another
// source is not held back by it; a trunk's source has its trunk's.
func TestGuardRateLimit(t *testing.T) {
	g := testGuard(t, map[string]config.SIPTrunk{"edge": {Sources: []string{"192.0.2.100"}, RatePerSecond: 100, Burst: 50}})
	edge := netip.MustParseAddr("192.0.2.100")
	for i := range 50 {
		if !g.allow(edge, time.Now()) {
			t.Fatalf("trunk message %d of its burst of 50 refused", i)
		}
	}
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	now := time.Now()
	for i := range 5 {
		if !g.allow(a, now) {
			t.Fatalf("message %d of the burst refused", i)
		}
	}
	if g.allow(a, now) {
		t.Fatal("past the burst, allowed")
	}
	if !g.allow(b, now) {
		t.Fatal("another source refused")
	}
	if !g.allow(a, now.Add(100*time.Millisecond)) { // 10/s: one token in 100 ms
		t.Fatal("a token did not come back at the rate")
	}
}

// TestGuardFilterDrops: the read filter drops a flood and a message of
// too many headers without an error, which would stop the listener.
func TestGuardFilterDrops(t *testing.T) {
	g := testGuard(t, nil)
	from := &net.UDPAddr{IP: net.ParseIP("192.0.2.9"), Port: 5060}
	msg := []byte("OPTIONS sip:x@y SIP/2.0\r\nVia: SIP/2.0/UDP a\r\n\r\n")
	info := sip.TransportReadProps{Transport: "udp", RemoteAddr: from}
	for range 5 {
		if out, err := g.filter(info, msg); err != nil || len(out) == 0 {
			t.Fatalf("within the burst: %q %v", out, err)
		}
	}
	if out, err := g.filter(info, msg); err != nil || len(out) != 0 {
		t.Fatalf("past the burst: %q %v", out, err)
	}
	many := []byte("OPTIONS sip:x@y SIP/2.0\r\n" + strings.Repeat("X-A: b\r\n", 100) + "\r\n")
	info.RemoteAddr = &net.UDPAddr{IP: net.ParseIP("192.0.2.10"), Port: 5060}
	if out, err := g.filter(info, many); err != nil || len(out) != 0 {
		t.Fatalf("100 headers: %q %v", out, err)
	}
}

// TestGuardDigest: a response computed with the trunk's password passes,
// one with another password, another user or a stale or forged nonce
// does not.
func TestGuardDigest(t *testing.T) {
	g := testGuard(t, map[string]config.SIPTrunk{"pbx": {Sources: []string{"10.0.0.5"}, Username: "alice", Password: config.NewSecret("s3cret")}})
	tr := g.trunk(netip.MustParseAddr("10.0.0.5"))
	nonce := g.nonce(time.Now())
	authorize := func(user, pass, nonce string) bool {
		ha1 := md5hex(user + ":" + realm + ":" + pass)
		ha2 := md5hex("INVITE:sip:bot@voxhost")
		resp := md5hex(ha1 + ":" + nonce + ":" + ha2)
		req := sip.NewRequest(sip.INVITE, sip.Uri{User: "bot", Host: "voxhost"})
		req.AppendHeader(sip.NewHeader("Authorization", fmt.Sprintf(`Digest username="%s", realm="%s", nonce="%s", uri="sip:bot@voxhost", response="%s", algorithm=MD5`, user, realm, nonce, resp)))
		return g.authorized(req, tr)
	}
	if !authorize("alice", "s3cret", nonce) {
		t.Fatal("the right password was refused")
	}
	if authorize("alice", "guess", nonce) || authorize("bob", "s3cret", nonce) {
		t.Fatal("a wrong user or password passed")
	}
	if authorize("alice", "s3cret", g.nonce(time.Now().Add(-time.Hour))) {
		t.Fatal("a stale nonce passed")
	}
	if authorize("alice", "s3cret", "1234.abcd") {
		t.Fatal("a forged nonce passed")
	}
	if !strings.Contains(g.challenge(), `realm="voxhost"`) {
		t.Fatal(g.challenge())
	}
}

// FuzzParseRequest: no message makes the SIP parser, the header bound or
// the parameter and route extraction panic, and a request within the
// bounds has its parameters within the host's limits.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte("INVITE sip:bot@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK1\r\nFrom: <sip:a@b>;tag=1\r\nTo: <sip:bot@c>\r\nCall-ID: x\r\nCSeq: 1 INVITE\r\nX-Customer-Id: 42\r\nSession-Expires: 1800;refresher=uac\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("OPTIONS sip:x SIP/2.0\r\nContent-Length: 5\r\n\r\nhello"))
	parser := sip.NewParser()
	parser.MaxMessageLength = config.DefaultSIP().MaxMessageBytes
	f.Fuzz(func(t *testing.T, data []byte) {
		headerLines(data)
		msg, err := parser.ParseSIP(data)
		if err != nil {
			return
		}
		req, ok := msg.(*sip.Request)
		if !ok {
			return
		}
		callParams(req)
		sessionInterval(req, 30*time.Minute)
		source(req)
	})
}
