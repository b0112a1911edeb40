package app_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/internal/app"
	"github.com/voxhost/voxhost/internal/botsim"
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
	// origins, playout and the stall timeout (the server's options) do.
	write("listen: ':9999'\norigins: [example.com]\nplayout: {send_ahead: 0s}\nlimits: {stall_timeout: 1s}\npipelines:\n  b: [{plugin: passthrough}]\n")
	rep, err := h.Reload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Pipelines, ",") != "b" || rep.Default != "b" || strings.Join(rep.RestartRequired, ",") != "limits,playout,origins" {
		t.Errorf("report: %+v", rep)
	}
	if names, def := h.Server.Routes(); strings.Join(names, ",") != "b" || def != "b" {
		t.Errorf("server pipelines %v, default %s", names, def)
	}
}

// TestReloadRelayRoute adds a route relayed to a bot by reloading the file,
// then changes its upstream (URL, a header's variable) and its outbound
// stages, then removes it: each reload reaches new calls, reads the
// environment again, and rebuilds only what changed.
func TestReloadRelayRoute(t *testing.T) {
	sim, err := botsim.New(botsim.Config{Mode: botsim.Echo})
	if err != nil {
		t.Fatal(err)
	}
	bot := httptest.NewServer(sim.Handler())
	defer bot.Close()
	botURL := "ws" + strings.TrimPrefix(bot.URL, "http") + botsim.Paths[botsim.ProtocolTwilio]

	path := filepath.Join(t.TempDir(), "voxhost.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const echo = "default_pipeline: a\npipelines:\n  a: [{plugin: passthrough}]\n"
	relay := func(urlPath, outbound string) string {
		return echo + fmt.Sprintf(`  bot:
    inbound: [{plugin: passthrough}]
    outbound: [%s]
    upstream:
      url: "%s%s/{call_id}?lang={param.lang}"
      protocol: twilio
      headers: {Authorization: "Bearer ${VOXHOST_TEST_BOT_TOKEN}"}
`, outbound, botURL, urlPath)
	}
	write(echo)
	cfg, err := app.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	o := app.Overrides{Addr: "127.0.0.1:0", CacheDir: "-"}
	if err := app.Apply(&cfg, o); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	h, err := app.New(ctx, cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	h.SetConfigFile(path, o)
	ready := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() { served <- h.ListenAndServe(ctx, func(a net.Addr) { ready <- a }) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	addr := (<-ready).String()

	// reload applies the file and checks the report's lists.
	reload := func(added, removed, rebuilt string) {
		t.Helper()
		rep, err := h.Reload(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%v %v %v", rep.Added, rep.Removed, rep.Rebuilt); got != fmt.Sprintf("[%s] [%s] [%s]", added, removed, rebuilt) {
			t.Fatalf("added, removed, rebuilt: %s, want [%s] [%s] [%s]", got, added, removed, rebuilt)
		}
	}
	// route describes the bot route as the admin API shows it.
	route := func() string {
		t.Helper()
		list, _ := h.Manager().Pipelines()
		for _, p := range list {
			if p.Name == "bot" {
				return fmt.Sprintf("out=%s %+v", p.Outbound[0].Plugin, *p.Upstream)
			}
		}
		t.Fatal("no route bot")
		return ""
	}
	// dialled places a call on the bot route and returns the URL and the
	// Authorization header the bot was dialled with.
	dialled := func() (string, string) {
		t.Helper()
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		before := len(sim.Calls())
		c, _, err := websocket.Dial(dctx, "ws://"+addr+"/ws?pipeline=bot&lang=de", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if err := c.Write(dctx, websocket.MessageBinary, make([]byte, 160)); err != nil {
			t.Fatal(err)
		}
		calls, err := sim.Wait(dctx, func(calls []botsim.Call) bool { return len(calls) > before })
		if err != nil {
			t.Fatalf("the bot was not dialled: %v", err)
		}
		return calls[before].URL, calls[before].Header.Get("Authorization")
	}

	t.Setenv("VOXHOST_TEST_BOT_TOKEN", "first")
	write(relay("", "{plugin: passthrough}"))
	reload("bot", "", "")
	if names, _ := h.Server.Routes(); strings.Join(names, ",") != "a,bot" {
		t.Fatalf("server routes %v", names)
	}
	wantURL := botURL + "/{call_id}?lang={param.lang}"
	if got := route(); !strings.Contains(got, "out=passthrough {URL:"+wantURL+" Protocol:twilio Codec:mulaw Rate:8000 Headers:[Authorization]") {
		t.Errorf("route bot: %s", got)
	}
	if url, auth := dialled(); !strings.HasPrefix(url, "/twilio/") || !strings.HasSuffix(url, "?lang=de") || auth != "Bearer first" {
		t.Errorf("dialled %s with Authorization %q", url, auth)
	}

	// Nothing changed: nothing is rebuilt.
	reload("", "", "")

	// The variable alone changed: the route is, since its header is.
	t.Setenv("VOXHOST_TEST_BOT_TOKEN", "second")
	reload("", "", "bot")
	if _, auth := dialled(); auth != "Bearer second" {
		t.Errorf("after the variable changed, Authorization %q", auth)
	}

	write(relay("/v2", "{plugin: gain, config: {db: -6}}"))
	reload("", "", "bot")
	if got := route(); !strings.Contains(got, "out=gain {URL:"+botURL+"/v2/{call_id}") {
		t.Errorf("route bot after the change: %s", got)
	}
	if url, _ := dialled(); !strings.HasPrefix(url, "/twilio/v2/") {
		t.Errorf("after the change, dialled %s", url)
	}

	// A variable that is gone refuses the reload, naming it; the route
	// stays as it was.
	os.Unsetenv("VOXHOST_TEST_BOT_TOKEN")
	if _, err := h.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "environment variable VOXHOST_TEST_BOT_TOKEN is not set") {
		t.Errorf("reload without the variable: %v", err)
	}
	if got := route(); !strings.Contains(got, "/v2/") {
		t.Errorf("a refused reload changed the route: %s", got)
	}

	write(echo)
	reload("", "bot", "")
	if names, _ := h.Server.Routes(); strings.Join(names, ",") != "a" {
		t.Errorf("server routes %v after removing bot", names)
	}
}
