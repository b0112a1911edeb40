package recording_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/recording"
)

// FuzzFileStem: whatever id a caller chooses, its stem is a plain name
// (letters, digits, '-', '%', '~'; never empty, never past 160 bytes) and
// one id's stem is no other's: unescaped it gives the id back, or it is
// cut and hashed.
func FuzzFileStem(f *testing.F) {
	for _, id := range []string{"CA123", "..", "../../etc/passwd", "a.b", "a_b", "", "%41", "~", strings.Repeat("é", 100), "a\x00b"} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		stem := recording.FileStem(id)
		if stem == "" || len(stem) > 160 {
			t.Fatalf("FileStem(%q) = %q: empty or past 160 bytes", id, stem)
		}
		for i := 0; i < len(stem); i++ {
			c := stem[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '%' || c == '~') {
				t.Fatalf("FileStem(%q) = %q has %q", id, stem, c)
			}
		}
		if strings.Contains(stem, "~") {
			return // cut, and made unique by the hash
		}
		if back, err := url.PathUnescape(stem); err != nil || back != id {
			t.Fatalf("FileStem(%q) = %q, which unescapes to %q (%v)", id, stem, back, err)
		}
	})
}
