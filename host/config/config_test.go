package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/app"
)

func TestLoadExample(t *testing.T) {
	// As voxhost serve loads it: with the runtime's checks too.
	c, err := config.LoadChecked("../../examples/voxhost.yaml", app.Checker{})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Config{
		Listen:           ":8080",
		PluginsDir:       "./plugins",
		CacheDir:         "/var/cache/voxhost",
		LogLevel:         "info",
		MemoryLimitPages: 256,
		Limits: config.Limits{
			MaxCalls:            1000,
			MaxMessageBytes:     65536,
			MaxFrameMs:          100,
			IdleTimeout:         10 * time.Second,
			DrainTimeout:        30 * time.Second,
			ReadyHighWater:      900,
			ReadyLowWater:       800,
			CPUHighWaterPercent: 85,
			CPULowWaterPercent:  70,
			CPUWaitHighWater:    10 * time.Millisecond,
			CPUWaitLowWater:     2 * time.Millisecond,
			SetupWait:           2 * time.Second,
			StallTimeout:        5 * time.Second,
			CallCPUShare:        0.5,
			FrameDeadline:       20 * time.Millisecond,
			CallHostCost:        0.00125,
		},
		PluginLimits: config.PluginLimits{
			Module:         exampleModuleLimits(),
			CompileTimeout: 2 * time.Minute,
			InitBudget:     50 * time.Millisecond,
		},
		Playout:         config.Playout{Queue: 20 * time.Second, SendAhead: 200 * time.Millisecond},
		SIP:             config.DefaultSIP(),
		HTTP:            config.HTTP{ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 2 * time.Minute, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10},
		Auth:            config.Auth{Tokens: []string{"change-me"}, TokensEnv: "VOXHOST_TOKENS"},
		Origins:         []string{"example.com", "*.example.com"},
		DefaultPipeline: "main",
	}
	pipelines := c.Pipelines
	c.Pipelines = nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	if len(pipelines) != 2 {
		t.Fatalf("pipelines: got %d, want main and loud", len(pipelines))
	}
	assertStages(t, pipelines["main"].Inbound, "gain db=-6 on_error=bypass budget_ms=5 | passthrough")
	assertStages(t, pipelines["loud"].Inbound, "gain db=6")
}

// exampleModuleLimits are the module limits of examples/voxhost.yaml: the
// runtime's defaults written out, but for the two it leaves to them.
func exampleModuleLimits() config.ModuleLimits {
	m := config.ModuleLimits(plugin.DefaultLimits)
	m.BranchTableEntries, m.RewriteFactor = 0, 0
	return m
}

// assertStages compares stages with an inline spec by their JSON config,
// because YAML and the inline syntax type the same number differently.
func assertStages(t *testing.T, stages []config.Stage, spec string) {
	t.Helper()
	want, err := pipeline.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]pipeline.StageSpec, len(stages))
	for i, st := range stages {
		got[i] = pipeline.StageSpec(st)
	}
	if len(got) != len(want) {
		t.Fatalf("%q: got %d stages, want %d", spec, len(got), len(want))
	}
	for i := range want {
		gotJSON, err := got[i].ConfigJSON()
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, err := want[i].ConfigJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Plugin != want[i].Plugin || got[i].OnError != want[i].OnError || got[i].BudgetMs != want[i].BudgetMs || string(gotJSON) != string(wantJSON) {
			t.Errorf("%q stage %d: got %s %s on_error=%q budget_ms=%d, want %s %s on_error=%q budget_ms=%d", spec, i,
				got[i].Plugin, gotJSON, got[i].OnError, got[i].BudgetMs, want[i].Plugin, wantJSON, want[i].OnError, want[i].BudgetMs)
		}
	}
}

func TestDefaultsWhenKeysAbsent(t *testing.T) {
	for name, data := range map[string]string{
		"empty":         "",
		"comments only": "# nothing set yet\n",
		"empty limits":  "limits:\n",
		"null values":   "listen: ~\nlimits:\n  max_calls:\nauth: {tokens: }\n",
	} {
		c, err := config.Parse("voxhost.yaml", []byte(data))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if want := config.Default(); !reflect.DeepEqual(c, want) {
			t.Errorf("%s: got %+v, want the defaults %+v", name, c, want)
		}
	}
}

func TestDefault(t *testing.T) {
	c := config.Default()
	if c.Listen != ":8080" || c.LogLevel != "info" || c.MemoryLimitPages != 256 || c.Pipelines != nil ||
		c.Limits != (config.Limits{MaxCalls: 1000, MaxMessageBytes: 65536, MaxFrameMs: 100, IdleTimeout: 10 * time.Second, DrainTimeout: 30 * time.Second,
			CPUHighWaterPercent: 85, SetupWait: 2 * time.Second, StallTimeout: 5 * time.Second}) ||
		c.Playout != (config.Playout{Queue: 20 * time.Second, SendAhead: 200 * time.Millisecond}) {
		t.Errorf("Default() = %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default() does not validate: %v", err)
	}
}

func TestPartialLimitsKeepOtherDefaults(t *testing.T) {
	c, err := config.Parse("voxhost.yaml", []byte("limits:\n  max_calls: 5\n  idle_timeout: 1m30s\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default().Limits
	want.MaxCalls = 5
	want.IdleTimeout = 90 * time.Second
	if c.Limits != want {
		t.Errorf("got %+v, want %+v", c.Limits, want)
	}
}

func TestPluginLimits(t *testing.T) {
	c, err := config.Parse("voxhost.yaml", []byte("plugin_limits:\n  tables: 2\n  table_elements: 100\n  init_budget: 20ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Default().PluginLimits
	want.Module.Tables, want.Module.TableElements, want.InitBudget = 2, 100, 20*time.Millisecond
	if c.PluginLimits != want {
		t.Errorf("got %+v, want %+v", c.PluginLimits, want)
	}
}

func TestBlockScalarIsAString(t *testing.T) {
	c, err := config.Parse("voxhost.yaml", []byte("listen: |-\n  127.0.0.1:9000\nlog_level: >-\n  warn\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:9000" || c.LogLevel != "warn" {
		t.Fatalf("listen %q, log_level %q", c.Listen, c.LogLevel)
	}
}

func TestSinglePipelineIsDefault(t *testing.T) {
	c, err := config.Parse("voxhost.yaml", []byte("pipelines:\n  only:\n    - plugin: passthrough\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.DefaultPipeline != "only" {
		t.Errorf("DefaultPipeline = %q, want the only pipeline", c.DefaultPipeline)
	}
	assertStages(t, c.Pipelines["only"].Inbound, "passthrough")
}

func TestAliasSharesStages(t *testing.T) {
	data := `default_pipeline: main
pipelines:
  main: &main
    - plugin: gain
      config: &quiet {db: -6}
    - plugin: passthrough
  copy: *main
  quiet:
    - plugin: gain
      config: *quiet
`
	c, err := config.Parse("voxhost.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	assertStages(t, c.Pipelines["copy"].Inbound, "gain db=-6 | passthrough")
	assertStages(t, c.Pipelines["quiet"].Inbound, "gain db=-6")
}

func TestResolvedTokens(t *testing.T) {
	t.Setenv("VOXHOST_TEST_TOKENS", " b , ,c,")
	c, err := config.Parse("voxhost.yaml", []byte("auth:\n  tokens: [a]\n  tokens_env: VOXHOST_TEST_TOKENS\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.ResolvedTokens(), []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ResolvedTokens() = %q, want %q", got, want)
	}
	if got := c.Auth.Tokens; !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("ResolvedTokens changed Auth.Tokens to %q", got)
	}

	c.Auth.TokensEnv = "VOXHOST_TEST_UNSET"
	if got := c.ResolvedTokens(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("with an unset variable: ResolvedTokens() = %q, want [a]", got)
	}
	none := config.Default()
	if got := none.ResolvedTokens(); got != nil {
		t.Errorf("no tokens: ResolvedTokens() = %q, want none", got)
	}
}

func TestAdmin(t *testing.T) {
	t.Setenv("VOXHOST_TEST_ADMIN_TOKENS", "y, z")
	c, err := config.Parse("voxhost.yaml", []byte("admin:\n  listen: '127.0.0.1:9090'\n  tokens: [x]\n  tokens_env: VOXHOST_TEST_ADMIN_TOKENS\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Admin{Listen: "127.0.0.1:9090", Tokens: []string{"x"}, TokensEnv: "VOXHOST_TEST_ADMIN_TOKENS"}
	if !reflect.DeepEqual(c.Admin, want) {
		t.Errorf("Admin = %+v, want %+v", c.Admin, want)
	}
	if got, want := c.ResolvedAdminTokens(), []string{"x", "y", "z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ResolvedAdminTokens() = %q, want %q", got, want)
	}
	if got := c.ResolvedTokens(); got != nil {
		t.Errorf("admin tokens must not admit calls: ResolvedTokens() = %q", got)
	}
	// No admin key: no admin API.
	if d := config.Default(); d.Admin.Listen != "" || d.ResolvedAdminTokens() != nil {
		t.Errorf("Default().Admin = %+v", d.Admin)
	}
	// Port 0 on both listeners is two different ports.
	if _, err := config.Parse("voxhost.yaml", []byte("listen: '127.0.0.1:0'\nadmin: {listen: '127.0.0.1:0'}\n")); err != nil {
		t.Errorf("port 0 twice: %v", err)
	}
}

// TestHTTPAndHosts reads the listeners' connection bounds and Host
// patterns, and resolves max_conns_per_ip's 0 from max_calls.
func TestHTTPAndHosts(t *testing.T) {
	c, err := config.Parse("voxhost.yaml", []byte("http:\n  read_header_timeout: 1s\n  read_timeout: 2s\n  idle_timeout: 3s\n  max_header_bytes: 4096\n  max_conns_per_ip: 5\n"+
		"allowed_hosts: [voice.example.com]\nadmin:\n  listen: '127.0.0.1:9090'\n  allowed_hosts: ['*.internal']\n  insecure_no_token: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.HTTP{ReadHeaderTimeout: time.Second, ReadTimeout: 2 * time.Second, IdleTimeout: 3 * time.Second, MaxHeaderBytes: 4096, MaxConnsPerIP: 5}
	if c.HTTP != want || c.ResolvedMaxConnsPerIP() != 5 {
		t.Errorf("HTTP = %+v, want %+v", c.HTTP, want)
	}
	if !reflect.DeepEqual(c.AllowedHosts, []string{"voice.example.com"}) || !reflect.DeepEqual(c.Admin.AllowedHosts, []string{"*.internal"}) || !c.Admin.InsecureNoToken {
		t.Errorf("allowed_hosts %q, admin %+v", c.AllowedHosts, c.Admin)
	}
	d := config.Default()
	if got := d.ResolvedMaxConnsPerIP(); got != d.Limits.MaxCalls+config.MaxConnsPerIPSlack {
		t.Errorf("default max_conns_per_ip resolves to %d", got)
	}
}

// TestExampleAdminSection uncomments the example's admin section, which is
// commented out so that the example serves no admin API, and loads it.
func TestExampleAdminSection(t *testing.T) {
	c, err := config.Parse("voxhost.yaml", exampleWith(t, "# admin:"))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Admin{Listen: "127.0.0.1:9090", Tokens: []string{"change-me-too"}, TokensEnv: "VOXHOST_ADMIN_TOKENS"}
	if !reflect.DeepEqual(c.Admin, want) {
		t.Errorf("Admin = %+v, want %+v", c.Admin, want)
	}
}

// exampleWith is the example config with one of its commented-out blocks
// uncommented: the line start and the more indented comment lines after
// it, each with its first "# " taken out.
func exampleWith(t *testing.T, start string) []byte {
	t.Helper()
	data, err := os.ReadFile("../../examples/voxhost.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	more := start[:strings.Index(start, "#")+1] + "   "
	found, in := false, false
	for i, l := range lines {
		switch {
		case l == start:
			found, in = true, true
		case in && !strings.HasPrefix(l, more):
			in = false
		}
		if in {
			lines[i] = strings.Replace(l, "# ", "", 1)
		}
	}
	if !found {
		t.Fatalf("the example has no line %q", start)
	}
	return []byte(strings.Join(lines, "\n"))
}

func TestValidateWithoutFile(t *testing.T) {
	c := config.Default()
	c.Limits.MaxCalls = 0
	err := c.Validate()
	if err == nil || err.Error() != "limits.max_calls: must be at least 1, got 0" {
		t.Errorf("Validate() = %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := config.Load("testdata/does-not-exist.yaml")
	if err == nil || !strings.Contains(err.Error(), "testdata/does-not-exist.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestConsole(t *testing.T) {
	c, err := config.Parse("voxhost.yaml", []byte(stage+"console: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Console {
		t.Error("console: true left Console false")
	}
	if config.Default().Console {
		t.Error("the console is on the main listener by default")
	}
}

// TestHardenedConfigLoads loads the hardened config docs/DEPLOY.md shows,
// so that the page an operator copies from stays a config voxhost takes.
func TestHardenedConfigLoads(t *testing.T) {
	doc, err := os.ReadFile("../../docs/DEPLOY.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## A hardened config\n")
	if !ok {
		t.Fatal("docs/DEPLOY.md has no section \"A hardened config\"")
	}
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the hardened config has no yaml block")
	}
	c, err := config.ParseChecked("DEPLOY.md", []byte(block), app.Checker{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Admin.InsecureNoToken || len(c.AllowedHosts) == 0 || c.Auth.TokensEnv == "" || c.Admin.TokensEnv == "" {
		t.Errorf("the hardened config is not: %+v", c)
	}
}
