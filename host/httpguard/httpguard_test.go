package httpguard

import "testing"

// TestHostAllowed pins Hosts' rules: names by pattern or localhost, IP
// addresses unless a loopback listener is asked for another one, and
// every name on a listener bound elsewhere that lists none.
func TestHostAllowed(t *testing.T) {
	for _, tc := range []struct {
		host     string
		patterns []string
		loopback bool
		want     bool
	}{
		{"127.0.0.1:9090", nil, true, true},
		{"[::1]:9090", nil, true, true},
		{"localhost:9090", nil, true, true},
		{"LOCALHOST.", nil, true, true},
		{"rebind.evil.example:9090", nil, true, false},
		{"", nil, true, false},
		{"10.0.0.1:9090", nil, true, false},
		{"10.0.0.1:8080", nil, false, true},
		{"voice.example.com", nil, false, true},
		{"voice.example.com:443", []string{"voice.example.com"}, false, true},
		{"a.example.com", []string{"*.example.com"}, true, true},
		{"evil.example", []string{"*.example.com"}, false, false},
		{"10.0.0.1", []string{"voice.example.com"}, false, true},
	} {
		if got := hostAllowed(tc.host, tc.patterns, tc.loopback); got != tc.want {
			t.Errorf("hostAllowed(%q, %q, loopback %v) = %v, want %v", tc.host, tc.patterns, tc.loopback, got, tc.want)
		}
	}
}
