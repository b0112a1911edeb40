package plugintest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/plugintest"
	"github.com/voxhost/voxhost/plugins"
)

func run(t *testing.T, name string, wasm []byte, config string) *plugintest.Report {
	t.Helper()
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	return plugintest.Run(ctx, rt, name, wasm, plugintest.Options{Config: []byte(config)})
}

func fixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// status finds a check's outcome; "" if it did not run.
func status(rep *plugintest.Report, name string) (plugintest.Status, string) {
	for _, c := range rep.Checks {
		if c.Name == name && c.Status != plugintest.Pass {
			return c.Status, c.Detail
		}
	}
	for _, c := range rep.Checks {
		if c.Name == name {
			return c.Status, c.Detail
		}
	}
	return "", ""
}

func TestStockGainPassesEveryCheck(t *testing.T) {
	gain, _ := plugins.Get("gain")
	rep := run(t, "gain", gain, `{"db":-6}`)
	if !rep.Passed || rep.NsPerFrame <= 0 {
		var sb strings.Builder
		rep.WriteText(&sb)
		t.Fatalf("gain must pass:\n%s", sb.String())
	}
	for _, c := range rep.Checks {
		if c.Status == plugintest.Fail || c.Status == plugintest.Warn {
			t.Fatalf("gain: %+v", c)
		}
	}
}

func TestFailuresAreReportedWithTheirReasons(t *testing.T) {
	testdata := filepath.Join("..", "plugin", "testdata")
	cases := []struct {
		file, check string
		want        plugintest.Status
		detail      string
	}{
		{filepath.Join(testdata, "trap.wasm"), "process shortest frame (1 ms)", plugintest.Fail, "trap in vox_process at frame 3: unreachable"},
		{filepath.Join(testdata, "grow.wasm"), "memory after init", plugintest.Fail, "memory grew from 1 to"},
		{filepath.Join(testdata, "status.wasm"), "process longest frame", plugintest.Warn, "refused 800 samples"},
		{filepath.Join(testdata, "missing_process.wasm"), "load", plugintest.Fail, "missing export vox_process"},
		{filepath.Join("testdata", "random.wasm"), "determinism", plugintest.Fail, "two fresh instances gave different output"},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			rep := run(t, filepath.Base(tc.file), fixture(t, tc.file), "")
			st, detail := status(rep, tc.check)
			if st != tc.want || !strings.Contains(detail, tc.detail) {
				t.Fatalf("check %q = %s %q, want %s with %q", tc.check, st, detail, tc.want, tc.detail)
			}
			if tc.want == plugintest.Fail && rep.Passed {
				t.Fatal("a failed check must fail the report")
			}
		})
	}
}
