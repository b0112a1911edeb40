package transport

import (
	"encoding/base64"
	"testing"

	"github.com/valyala/fastjson"
)

// The media path's JSON reading, by the scanner (json.go) and by
// github.com/valyala/fastjson side by side, on a Twilio media message of
// 20 ms: pick out event, media.payload and media.track, and decode the
// payload. RATIONALE.md ("The JSON carriers' skeleton") records the
// figures and why the scanner stays.

func scannerBenchMessage() []byte {
	payload := base64.StdEncoding.EncodeToString(make([]byte, 160))
	return []byte(`{"event":"media","sequenceNumber":"4","media":{"track":"inbound","chunk":"2","timestamp":"5","payload":"` +
		payload + `"},"streamSid":"MZ18ad3ab5a668481ce02b83e7395059f0"}`)
}

// TestScannerAndFastjsonAgree checks that the two readers the benchmark
// compares find the same members, so that they are measured doing the
// same work.
func TestScannerAndFastjsonAgree(t *testing.T) {
	msg := scannerBenchMessage()
	f, err := twilio.read(Text, msg, &Inbound{}, "sends", "")
	if err != nil {
		t.Fatal(err)
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(msg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		scan, fast []byte
	}{
		{"event", f.kind, v.GetStringBytes("event")},
		{"media.payload", f.payload, v.GetStringBytes("media", "payload")},
		{"media.track", f.track, v.GetStringBytes("media", "track")},
	} {
		if got := string(appendText(nil, c.scan)); got != string(c.fast) {
			t.Errorf("%s: the scanner found %q, fastjson %q", c.name, got, c.fast)
		}
	}
}

// TestFastjsonParseIsLenient is why the benchmark's fair comparison is
// fastjson+validate: fastjson's parser alone takes messages that are not
// JSON, which the scanner and fastjson.Validate refuse, as encoding/json
// does and as the carriers' fuzz targets require.
func TestFastjsonParseIsLenient(t *testing.T) {
	for _, m := range []string{
		`{"event":"media","x":"\q","media":{"payload":"AAAA"}}`,
		"{\"event\":\"media\",\"x\":\"a\x01b\",\"media\":{\"payload\":\"AAAA\"}}",
		`{"event":"media","x":01,"media":{"payload":"AAAA"}}`,
		`{"event":"media","x":"\u12","media":{"payload":"AAAA"}}`,
	} {
		var p fastjson.Parser
		_, parseErr := p.Parse(m)
		_, scanErr := twilio.read(Text, []byte(m), &Inbound{}, "sends", "")
		if parseErr != nil || fastjson.Validate(m) == nil || scanErr == nil {
			t.Errorf("%q: fastjson.Parse %v, fastjson.Validate %v, the scanner %v; want nil and two errors", m, parseErr, fastjson.Validate(m), scanErr)
		}
	}
}

func BenchmarkJSONMediaRead(b *testing.B) {
	msg := scannerBenchMessage()
	dst := payloadBuffer(160)
	b.Run("scanner", func(b *testing.B) {
		var scratch []byte
		b.SetBytes(int64(len(msg)))
		b.ReportAllocs()
		for b.Loop() {
			f, err := twilio.read(Text, msg, &Inbound{}, "sends", "")
			if err != nil || !textIs(f.kind, "media") || !textIs(f.track, "inbound") {
				b.Fatal(err)
			}
			if _, err := f.audio(twilioName, dst, &scratch, 160); err != nil {
				b.Fatal(err)
			}
		}
	})
	// fastjson's parser checks the structure but not every string's
	// escapes, which the scanner (like encoding/json) refuses when bad;
	// with fastjson.ValidateBytes first it checks as much as the scanner.
	for _, validate := range []bool{false, true} {
		name := "fastjson"
		if validate {
			name += "+validate"
		}
		b.Run(name, func(b *testing.B) {
			var p fastjson.Parser
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if validate {
					if err := fastjson.ValidateBytes(msg); err != nil {
						b.Fatal(err)
					}
				}
				v, err := p.ParseBytes(msg)
				if err != nil || string(v.GetStringBytes("event")) != "media" || string(v.GetStringBytes("media", "track")) != "inbound" {
					b.Fatal(err)
				}
				if _, err := base64.StdEncoding.Decode(dst, v.GetStringBytes("media", "payload")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
