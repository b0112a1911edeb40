package plugintest_test

import (
	"strings"
	"testing"

	"github.com/voxhost/voxhost/internal/plugintest"
)

// plugin test gives a plugin that asks for the far-end reference the frame
// itself as its reference: refsub, which subtracts it, then outputs
// silence; a plugin that does not ask skips the check.
func TestFarEndReferenceIsExercised(t *testing.T) {
	rep := run(t, "refsub.wasm", fixture(t, "../../host/plugin/testdata/refsub.wasm"), plugintest.Options{Soak: -1})
	c, ok := find(rep, "far-end reference")
	if !ok || c.Status != plugintest.Pass || !strings.Contains(c.Detail, "50 frames") || !strings.Contains(c.Detail, "output -") {
		t.Fatalf("far-end reference check: %+v", c)
	}
	rep = run(t, "passthrough.wasm", fixture(t, "../../plugins/passthrough/passthrough.wasm"), plugintest.Options{Soak: -1})
	if c, ok := find(rep, "far-end reference"); !ok || c.Status != plugintest.Skip {
		t.Fatalf("far-end reference check of a plugin without vox_reference: %+v", c)
	}
}
