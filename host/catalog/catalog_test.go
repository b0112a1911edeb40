package catalog_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/plugins"
)

func newCatalog(t *testing.T, dir string) *catalog.Catalog {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New(rt, dir)
	t.Cleanup(func() {
		c.Close(ctx)
		rt.Close(ctx)
	})
	return c
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "admin", "testdata", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVersions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := newCatalog(t, dir)
	gain, _ := plugins.Get("gain")
	v, err := c.ResolveVersion(ctx, "gain")
	if err != nil {
		t.Fatal(err)
	}
	if v.Source != catalog.SourceStock || v.SHA256 != hexSHA(gain) || v.Size != len(gain) || v.LoadedAt.IsZero() {
		t.Errorf("stock gain: %+v", v)
	}
	// Unchanged: Reread finds the same hash.
	if same, changed, err := c.Reread(ctx, "gain"); err != nil || changed || same != v {
		t.Errorf("Reread unchanged: %v %v %v", same, changed, err)
	}
	// NAME.wasm in the plugin directory overrides the stock plugin, but only
	// once installed.
	negate := fixture(t, "negate")
	if err := os.WriteFile(filepath.Join(dir, "gain.wasm"), negate, 0o644); err != nil {
		t.Fatal(err)
	}
	next, changed, err := c.Reread(ctx, "gain")
	if err != nil || !changed || next.Source != catalog.SourcePluginsDir || next.SHA256 != hexSHA(negate) || next.Path != filepath.Join(dir, "gain.wasm") {
		t.Fatalf("Reread changed: %+v %v %v", next, changed, err)
	}
	if cur, _ := c.Current("gain"); cur != v {
		t.Error("Reread installed the new version")
	}
	c.Install(next)
	if cur, _ := c.Current("gain"); cur != next {
		t.Error("Install did not make the new version current")
	}
	// A bad file: the reason, and the current version stays.
	if err := os.WriteFile(filepath.Join(dir, "gain.wasm"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ve *plugin.ValidationError
	if _, _, err := c.Reread(ctx, "gain"); !errors.As(err, &ve) {
		t.Errorf("Reread of junk: %v", err)
	}
	if cur, _ := c.Current("gain"); cur != next {
		t.Error("a bad file replaced the current version")
	}
	// Gone: back to the stock plugin.
	os.Remove(filepath.Join(dir, "gain.wasm"))
	if back, changed, err := c.Reread(ctx, "gain"); err != nil || !changed || back.Source != catalog.SourceStock {
		t.Errorf("Reread after removal: %+v %v %v", back, changed, err)
	} else {
		c.Discard(ctx, back)
	}
	if _, _, err := c.Reread(ctx, "nosuch"); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Reread of an unknown name: %v", err)
	}
	if _, _, err := c.Reread(ctx, filepath.Join(dir, "nosuch.wasm")); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Reread of a missing path: %v", err)
	}
	// An upload kept in memory is not reread from anywhere.
	up, err := c.Load(ctx, "mem", negate, catalog.SourceUpload)
	if err != nil {
		t.Fatal(err)
	}
	c.Install(up)
	if got, changed, err := c.Reread(ctx, "mem"); got != up || changed || err != nil {
		t.Errorf("Reread of an upload: %v %v %v", got, changed, err)
	}
}

// TestRetiredVersionsCloseAfterGrace: a replaced version still makes
// instances during the grace (a call that picked its pipeline just before
// a swap), and is closed after it.
func TestRetiredVersionsCloseAfterGrace(t *testing.T) {
	defer func(d time.Duration) { catalog.RetireAfter = d }(catalog.RetireAfter)
	catalog.RetireAfter = 100 * time.Millisecond
	ctx := context.Background()
	c := newCatalog(t, "")
	old, err := c.Load(ctx, "flip", fixture(t, "negate"), catalog.SourceUpload)
	if err != nil {
		t.Fatal(err)
	}
	c.Install(old)
	running, err := old.Plugin.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close(ctx)
	next, err := c.Load(ctx, "flip", fixture(t, "halve"), catalog.SourceUpload)
	if err != nil {
		t.Fatal(err)
	}
	c.Install(next)
	late, err := old.Plugin.Instantiate(ctx, plugin.InstanceConfig{})
	if err != nil {
		t.Fatalf("the replaced version cannot make an instance during its grace: %v", err)
	}
	late.Close(ctx)
	time.Sleep(300 * time.Millisecond)
	if in, err := old.Plugin.Instantiate(ctx, plugin.InstanceConfig{}); err == nil {
		in.Close(ctx)
		t.Error("the replaced version is still open after its grace")
	}
	// The instance made before the swap still works after the close.
	if _, err := running.Process(80); err != nil {
		t.Errorf("an instance of the closed version: %v", err)
	}
	if in, err := next.Plugin.Instantiate(ctx, plugin.InstanceConfig{}); err != nil {
		t.Errorf("the current version: %v", err)
	} else {
		in.Close(ctx)
	}
}
