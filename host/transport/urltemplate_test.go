package transport_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/transport"
)

// TestCheckURLTemplate: placeholders stand in the path and query only,
// and the error names the part a misplaced one stands in (issue 26,
// finding 1).
func TestCheckURLTemplate(t *testing.T) {
	for tmpl, want := range map[string]string{
		"ws://10.255.255.{param.n}:18091/region": "placeholder {param.n} in the host",
		"ws://127.0.0.1:{param.port}/p":          "placeholder {param.port} in the port",
		"ws://{param.u}:pw@bot.example/p":        "placeholder {param.u} in the userinfo",
		"ws://u:{call_id}@bot.example/p":         "placeholder {call_id} in the userinfo",
		"{param.s}://bot.example/p":              "placeholder {param.s} in the scheme",
		"ws://bot{route}":                        "placeholder {route} in the host",
		"ws://[::1]:{param.p}/x":                 "placeholder {param.p} in the port",
		"ws://[::{param.p}]:80/x":                "placeholder {param.p} in the host",
		"ws://bot.example/a/../b":                `dot segment ("..")`,
		"ws://bot.example/%2e/b":                 `dot segment ("%2e")`,
		"ws://bot.example/%4{call_id}":           "% that does not begin an escape",
		"ws://bot.example/100%":                  "% that does not begin an escape",
		"http://bot.example/{call_id}":           "scheme must be ws or wss",
		"ws:/{call_id}":                          "has no host",
	} {
		err := transport.CheckURLTemplate(tmpl)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckURLTemplate(%q) = %v, want an error saying %q", tmpl, err, want)
		}
	}
	for _, tmpl := range []string{
		"wss://bot.example/media/{call_id}?stream={stream_id}&lang={param.lang}",
		"ws://u:pw@[::1]:8080/{param.a}.{param.b}/x%20y#{route}",
		"ws://bot.example?{param.q}",
		"ws://bot.example/..%2F/.a",
	} {
		if err := transport.CheckURLTemplate(tmpl); err != nil {
			t.Errorf("CheckURLTemplate(%q) = %v, want nil", tmpl, err)
		}
	}
}

// TestExpandURL: a caller's value that would make a dot segment of a path
// segment is refused (finding 6), one that only looks like one is not, and
// a template that skipped CheckURLTemplate still cannot have its host moved
// (finding 1's dial-time check). Errors never quote the URL.
func TestExpandURL(t *testing.T) {
	tmpl := "ws://bot.example/bot/{param.a}{param.b}/{call_id}?key=SECRET&lang={param.a}"
	for _, tc := range []struct {
		call, a, b string
		want       string // the URL, or "" for refused
	}{
		{"CA1", "de", "", "ws://bot.example/bot/de/CA1?key=SECRET&lang=de"},
		{"..", "de", "", ""},
		{".", "de", "", ""},
		{"CA1", ".", ".", ""},
		{"CA1", "..", "", ""},
		{"...", "x.", ".", "ws://bot.example/bot/x../...?key=SECRET&lang=x."},
		{"%2E%2E", "a/../b", "", "ws://bot.example/bot/a%2F..%2Fb/%252E%252E?key=SECRET&lang=a%2F..%2Fb"},
	} {
		got, err := transport.ExpandURL(tmpl, transport.CallInfo{CallID: tc.call, Params: map[string]string{"a": tc.a, "b": tc.b}})
		switch {
		case tc.want == "" && (err == nil || !strings.Contains(err.Error(), "dot segment")):
			t.Errorf("call %q, a %q, b %q: %q, %v; want it refused for a dot segment", tc.call, tc.a, tc.b, got, err)
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("call %q, a %q, b %q: %q, %v; want %q", tc.call, tc.a, tc.b, got, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "SECRET"):
			t.Errorf("the error %q quotes the URL", err)
		}
	}
	for _, tmpl := range []string{"ws://10.255.255.{param.n}:18091/region", "ws://127.0.0.1:{param.n}/p", "ws://{param.n}/p"} {
		got, err := transport.ExpandURL(tmpl, transport.CallInfo{Params: map[string]string{"n": "1@127.0.0.1"}})
		if err == nil {
			t.Errorf("ExpandURL(%q) = %q: a caller moved the dial", tmpl, got)
		}
	}
}

// FuzzExpandURL checks the URL template filler against url.Parse: for any
// template CheckURLTemplate accepts and any caller value in every
// placeholder, the filled URL parses, names the template's scheme,
// userinfo, host and port, has no dot segment in its path and no byte that
// would split or end a request line; or it is refused for a dot segment.
func FuzzExpandURL(f *testing.F) {
	f.Add("wss://bot.example/media/{call_id}?stream={stream_id}&lang={param.lang}", "de")
	f.Add("ws://10.255.255.{param.n}:18091/region", "1@127.0.0.1")
	f.Add("ws://127.0.0.1:{param.port}/p", "22")
	f.Add("ws://bot.example/tw/{call_id}/{stream_id}", "..")
	f.Add("ws://bot.example/a{call_id}b/{param.x}.{param.y}", ".")
	f.Add("ws://u:p@[::1]:9/{route}?q={param.q}#{param.f}", "a b\r\nHost: evil\x00%2e/?#@:")
	f.Add("ws://bot.example/%41{call_id}", "%zz")
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		params, probe := map[string]string{}, map[string]string{}
		for rest := tmpl; ; {
			_, after, ok := strings.Cut(rest, "{param.")
			if !ok {
				break
			}
			name, _, _ := strings.Cut(after, "}")
			params[name], probe[name] = value, "p"
			rest = after
		}
		info := transport.CallInfo{CallID: value, StreamID: value, AccountID: value, Route: value, Params: params}
		if transport.CheckURLTemplate(tmpl) != nil {
			_, _ = transport.ExpandURL(tmpl, info) // must not panic
			return
		}
		ref, err := transport.ExpandURL(tmpl, transport.CallInfo{CallID: "c", StreamID: "s", AccountID: "a", Route: "r", Params: probe})
		if err != nil {
			t.Fatalf("the template passed CheckURLTemplate, but its probe fails: %v", err)
		}
		filled, err := transport.ExpandURL(tmpl, info)
		if err != nil {
			if !strings.Contains(err.Error(), "dot segment") {
				t.Fatalf("refused for another reason than a dot segment: %v", err)
			}
			return
		}
		want, err := url.Parse(ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := url.Parse(filled)
		if err != nil {
			t.Fatalf("%q filled is %q, which does not parse: %v", tmpl, filled, err)
		}
		if got.Scheme != want.Scheme || got.User.String() != want.User.String() || got.Host != want.Host {
			t.Fatalf("the caller's %q moved the dial: %q is %s://%s@%s, the template names %s://%s@%s",
				value, filled, got.Scheme, got.User, got.Host, want.Scheme, want.User, want.Host)
		}
		// Segments as RFC 3986 has them: split at the path's own slashes,
		// then decoded (an escaped slash, %2F, is data). RawPath is the
		// path as written when it differs from Path's own escaping; when
		// it is empty, Path has no escaped slash to mind.
		segs := strings.Split(got.Path, "/")
		if got.RawPath != "" {
			segs = strings.Split(got.RawPath, "/")
			for i, seg := range segs {
				if segs[i], err = url.PathUnescape(seg); err != nil {
					t.Fatalf("%q parsed, but its raw path %q does not decode: %v", filled, got.RawPath, err)
				}
			}
		}
		for _, seg := range segs {
			if seg == "." || seg == ".." {
				t.Fatalf("%q has a dot segment in its path", filled)
			}
		}
		// Bytes that would split or end a request line, unless the
		// template itself has them.
		splits := func(r rune) bool { return r <= ' ' || r == 0x7f }
		if i := strings.IndexFunc(filled, splits); i >= 0 && strings.IndexFunc(ref, splits) < 0 {
			t.Fatalf("%q has byte %q at %d", filled, filled[i], i)
		}
	})
}
