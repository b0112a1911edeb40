package app_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/app"
	"github.com/voxhost/voxhost/host/config"
)

func TestAdminRefusals(t *testing.T) {
	for _, tc := range []struct {
		admin config.Admin
		env   string
		want  string // "" = accepted
	}{
		{config.Admin{Listen: "127.0.0.1:9090"}, "", ""},
		{config.Admin{Listen: "[::1]:9090"}, "", ""},
		{config.Admin{Listen: "localhost:9090"}, "", ""},
		{config.Admin{Listen: ":9090"}, "", "admin.listen :9090 is not a loopback address and there are no admin tokens"},
		{config.Admin{Listen: "10.0.0.5:9090"}, "", "is not a loopback address"},
		{config.Admin{Listen: "0.0.0.0:9090", Tokens: []string{"t"}}, "", ""},
		{config.Admin{Listen: "0.0.0.0:9090", TokensEnv: "VOXHOST_TEST_ADMIN"}, "t", ""},
		{config.Admin{Listen: "127.0.0.1:9090", TokensEnv: "VOXHOST_TEST_ADMIN"}, "", "admin.tokens_env names VOXHOST_TEST_ADMIN, which holds no tokens"},
		{config.Admin{Tokens: []string{"t"}}, "", ""}, // no admin API at all
	} {
		t.Setenv("VOXHOST_TEST_ADMIN", tc.env)
		cfg := config.Default()
		cfg.Admin = tc.admin
		err := app.Apply(&cfg, app.Overrides{})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.admin, err, tc.want)
		}
	}
	// --admin-addr overrides the file, and is checked the same way.
	cfg := config.Default()
	cfg.Admin.Listen = "127.0.0.1:9090"
	if err := app.Apply(&cfg, app.Overrides{AdminAddr: ":9091"}); err == nil || !strings.Contains(err.Error(), ":9091 is not a loopback address") {
		t.Errorf("--admin-addr :9091: %v", err)
	}
}

func TestNoAdminNoFileNoReload(t *testing.T) {
	cfg := config.Default()
	if err := app.Apply(&cfg, app.Overrides{Addr: "127.0.0.1:0", CacheDir: "-", Pipeline: "gain"}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	h, err := app.New(ctx, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if _, err := h.Reload(ctx); err == nil || !strings.Contains(err.Error(), "started without a config file") {
		t.Errorf("Reload without a file: %v", err)
	}
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- h.ListenAndServe(ctx, func(a net.Addr) { ready <- a }) }()
	<-ready
	if a := h.AdminAddr(); a != nil {
		t.Errorf("admin API on %v without admin.listen", a)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestReloadKeepsOverridesAndReportsRestartKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "voxhost.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("listen: ':8080'\npipelines:\n  a: [{plugin: gain}]\n")
	cfg, err := app.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	o := app.Overrides{Addr: "127.0.0.1:0", CacheDir: "-", DrainTimeout: 3 * time.Second}
	if err := app.Apply(&cfg, o); err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.DrainTimeout != 3*time.Second || cfg.Listen != "127.0.0.1:0" {
		t.Fatalf("overrides not applied: %+v", cfg)
	}
	h, err := app.New(context.Background(), cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	h.SetConfigFile(path, o)
	// The file's listen is overridden, so changing it needs no restart;
	// origins do.
	write("listen: ':9999'\norigins: [example.com]\npipelines:\n  b: [{plugin: passthrough}]\n")
	rep, err := h.Reload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Pipelines, ",") != "b" || rep.Default != "b" || strings.Join(rep.RestartRequired, ",") != "origins" {
		t.Errorf("report: %+v", rep)
	}
	if names, def := h.Server.Routes(); strings.Join(names, ",") != "b" || def != "b" {
		t.Errorf("server pipelines %v, default %s", names, def)
	}
}
