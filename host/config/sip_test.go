package config

import (
	"strings"
	"testing"
	"time"
)

const sipBase = `
pipelines:
  echo: [{plugin: passthrough}]
sip:
  listen: 0.0.0.0:5060
  external_address: 203.0.113.7
  rtp_port_min: 30000
  rtp_port_max: 30099
  route: echo
  codecs: [pcma]
  session_expires: 10m
  trunks:
    twilio:
      sources: ["54.172.60.0/30", "54.244.51.3"]
      username: voxhost
      password: "${SIP_TEST_PASSWORD}"
`

// TestSIPParse reads every sip key and keeps the defaults of the others.
func TestSIPParse(t *testing.T) {
	t.Setenv("SIP_TEST_PASSWORD", "s3cret")
	c, err := Parse("voxhost.yaml", []byte(sipBase))
	if err != nil {
		t.Fatal(err)
	}
	s := c.SIP
	if s.Listen != "0.0.0.0:5060" || s.ExternalAddress != "203.0.113.7" || s.RTPPortMin != 30000 || s.RTPPortMax != 30099 ||
		s.Route != "echo" || len(s.Codecs) != 1 || s.SessionExpires != 10*time.Minute {
		t.Fatalf("sip %+v", s)
	}
	if s.MaxMessageBytes != DefaultSIP().MaxMessageBytes || s.JitterMax != DefaultSIP().JitterMax {
		t.Fatalf("defaults lost: %+v", s)
	}
	tr := s.Trunks["twilio"]
	if tr.Username != "voxhost" || tr.Password.Reveal() != "s3cret" || len(tr.Prefixes()) != 2 || tr.Prefixes()[1].Bits() != 32 {
		t.Fatalf("trunk %+v", tr)
	}
}

// TestSIPInvalid: each bad value is named by its key.
func TestSIPInvalid(t *testing.T) {
	t.Setenv("SIP_TEST_PASSWORD", "s3cret")
	for _, c := range []struct{ from, to, key string }{
		{"listen: 0.0.0.0:5060", "listen: nope", "sip.listen"},
		{"external_address: 203.0.113.7", "external_address: sip.example.com", "sip.external_address"},
		{"rtp_port_max: 30099", "rtp_port_max: 100", "sip.rtp_port_min"},
		{"codecs: [pcma]", "codecs: [g729]", "sip.codecs[0]"},
		{"route: echo", "route: nope", "sip.route"},
		{"session_expires: 10m", "session_expires: 10s", "sip.session_expires"},
		{`"54.244.51.3"`, `"54.244.51.3/99"`, "sip.trunks.twilio.sources[1]"},
		{"      username: voxhost\n", "", "sip.trunks.twilio.username"},
	} {
		yaml := strings.Replace(sipBase, c.from, c.to, 1)
		_, err := Parse("voxhost.yaml", []byte(yaml))
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%q: err %v, want one naming %s", c.to, err, c.key)
		}
	}
	if _, err := Parse("voxhost.yaml", []byte("pipelines:\n  echo: [{plugin: passthrough}]\nsip:\n  listen: :5060\n")); err == nil || !strings.Contains(err.Error(), "sip.trunks") {
		t.Errorf("no trunks: %v", err)
	}
}
