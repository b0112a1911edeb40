package plugins_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/voxhost/voxhost/plugins"
)

// TestStockPluginsAreTheBuiltFiles: every plugins/NAME/NAME.wasm is served
// as the stock plugin NAME, byte for byte, and nothing else is.
func TestStockPluginsAreTheBuiltFiles(t *testing.T) {
	files, err := filepath.Glob("*/*.wasm")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		if filepath.Base(f) != name+".wasm" {
			continue
		}
		want = append(want, name)
		built, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if stock, ok := plugins.Get(name); !ok || string(stock) != string(built) {
			t.Errorf("plugins.Get(%q) is not %s", name, f)
		}
	}
	if got := plugins.Names(); len(got) != len(want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "../gain", "gain/gain", "nope"} {
		if _, ok := plugins.Get(bad); ok {
			t.Errorf("plugins.Get(%q) found something", bad)
		}
	}
}
