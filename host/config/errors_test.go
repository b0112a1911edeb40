package config_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/config"
)

// stage is a valid pipelines section, for cases about other keys.
const stage = "pipelines:\n  main:\n    - plugin: gain\n"

// relay begins a relay route whose upstream url is on line 5: cases add
// the upstream's other keys from line 6.
const relay = "pipelines:\n  bot:\n    inbound: [{plugin: passthrough}]\n    upstream:\n      url: wss://bot.example.com/ws\n"

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		// prefix is the exact "file:line:col: " start of the error and msg
		// a substring of the rest.
		prefix, msg string
	}{
		// Syntax.
		{"unclosed list", "listen: [a\n", "voxhost.yaml:1:9: ", "sequence end token ']' not found"},
		{"duplicate key", "listen: a\nlisten: b\n", "voxhost.yaml:2:1: ", `mapping key "listen" already defined`},
		{"second document", "listen: ':1'\n---\nlisten: ':2'\n", "voxhost.yaml:3:1: ", "a second YAML document"},

		// Unknown keys.
		{"unknown top-level key", "# config\n\nlisen: ':8080'\n", "voxhost.yaml:3:1: ", `unknown key "lisen" (want one of: admin, allowed_hosts, audiosocket, auth, cache_dir, console, default_pipeline, http, limits, listen, log_level, memory_limit_pages, origins, pipelines, playout, plugin_limits, plugins_dir, sip)`},
		{"unknown limits key", "limits:\n  max_call: 5\n", "voxhost.yaml:2:3: ", `limits: unknown key "max_call" (want one of: call_cpu_share, call_host_cost, cpu_high_water_percent, cpu_low_water_percent, cpu_wait_high_water, cpu_wait_low_water, drain_timeout, frame_deadline, idle_timeout, max_calls, max_concurrent_setups, max_frame_ms, max_message_bytes, plugin_slots, ready_high_water, ready_low_water, setup_wait, stall_timeout)`},
		{"unknown auth key", "auth:\n  token: [a]\n", "voxhost.yaml:2:3: ", `auth: unknown key "token" (want one of: tokens, tokens_env)`},
		{"unknown stage key", "pipelines:\n  main:\n    - plugin: gain\n      onerror: bypass\n", "voxhost.yaml:4:7: ", `pipelines.main[0]: unknown key "onerror" (want one of: budget_ms, config, on_error, plugin)`},
		{"merge key", "limits: &l {max_calls: 5}\nauth:\n  <<: *l\n", "voxhost.yaml:3:3: ", "auth: merge keys (<<) are not supported"},
		{"audiosocket on the call port", "listen: ':8080'\naudiosocket:\n  listen: ':8080'\n", "voxhost.yaml:3:11: ", `audiosocket.listen: ":8080" is also another listener's address`},
		{"audiosocket route", "pipelines:\n  main: [{plugin: gain}]\naudiosocket:\n  listen: 127.0.0.1:9092\n  pipeline: mian\n", "voxhost.yaml:5:13: ", `audiosocket.pipeline: unknown pipeline "mian"`},

		// Wrong types.
		{"top level not a mapping", "- listen\n", "voxhost.yaml:1:1: ", "want a mapping, got sequence"},
		{"int for string", "listen: 8080\n", "voxhost.yaml:1:9: ", `listen: want a string, got int 8080; quote it to mean the text "8080"`},
		{"string for int", "limits:\n  max_calls: lots\n", "voxhost.yaml:2:14: ", "limits.max_calls: want an integer, got string \"lots\""},
		{"float for int", "limits:\n  max_calls: 1.5\n", "voxhost.yaml:2:14: ", "limits.max_calls: want an integer, got float 1.5"},
		{"negative pages", "memory_limit_pages: -1\n", "voxhost.yaml:1:21: ", "memory_limit_pages: -1 is out of range"},
		{"negative plugin limit", "plugin_limits:\n  table_elements: -1\n", "voxhost.yaml:2:19: ", "plugin_limits.table_elements: -1 is out of range"},
		{"zero plugin limit", "plugin_limits:\n  tables: 0\n", "voxhost.yaml:2:11: ", "plugin_limits.tables: must be at least 1"},
		{"zero init budget", "plugin_limits:\n  init_budget: 0s\n", "voxhost.yaml:2:16: ", "plugin_limits.init_budget: must be positive, got 0s"},
		{"int for bool", "console: 1\n", "voxhost.yaml:1:10: ", "console: want true or false, got int 1"},
		{"scalar for mapping", "limits: 5\n", "voxhost.yaml:1:9: ", "limits: want a mapping, got int 5"},
		{"string for list", "origins: example.com\n", "voxhost.yaml:1:10: ", "origins: want a list, got string \"example.com\""},
		{"number in token list", "auth:\n  tokens: [abc, 0x1f]\n", "voxhost.yaml:2:17: ", `auth.tokens[1]: want a string, got int 0x1f; quote it to mean the text "0x1f"`},
		{"list for pipelines", "pipelines: [gain]\n", "voxhost.yaml:1:12: ", "pipelines: want a mapping, got sequence"},
		{"string for stage", "pipelines:\n  main:\n    - passthrough\n", "voxhost.yaml:3:7: ", "pipelines.main[0]: want a stage such as {plugin: gain}, got string \"passthrough\""},
		{"scalar for plugin config", "pipelines:\n  main:\n    - plugin: gain\n      config: -6\n", "voxhost.yaml:4:15: ", "pipelines.main[0].config: want a mapping, got int -6"},
		{"zero budget", "pipelines:\n  main:\n    - plugin: gain\n      budget_ms: 0\n", "voxhost.yaml:4:18: ", "pipelines.main[0].budget_ms: must be positive, got 0"},
		{"duration for budget", "pipelines:\n  main:\n    - plugin: gain\n      budget_ms: 5ms\n", "voxhost.yaml:4:18: ", `pipelines.main[0].budget_ms: want an integer, got string "5ms"`},
		{"int pipeline name", "pipelines:\n  1: [{plugin: gain}]\n", "voxhost.yaml:2:3: ", "pipelines: want a string key, got int 1"},
		{"tag", "listen: !!str 8080\n", "voxhost.yaml:1:9: ", "listen: YAML tags such as !!str are not supported; quote the value instead"},
		{"unknown alias", "listen: *addr\n", "voxhost.yaml:1:9: ", "listen: alias *addr has no anchor &addr before it"},
		{"alias with a line break", "* 0\n\n0", "voxhost.yaml:1:1: ", `alias *"0\n0" has no anchor &"0\n0" before it`},

		// Durations.
		{"bad duration", "# limits\nlimits:\n  max_calls: 10\n  max_frame_ms: 40\n\n  # comment\n  idle_timeout: ten\n", "voxhost.yaml:7:17: ", `limits.idle_timeout: time: invalid duration "ten"`},
		{"duration without unit", "limits:\n  drain_timeout: 30\n", "voxhost.yaml:2:18: ", `limits.drain_timeout: want a duration such as "10s" or "1m30s", got int 30`},

		// Bad values, found by Validate after decoding.
		{"listen without port", "listen: localhost\n", "voxhost.yaml:1:9: ", `listen: address "localhost": missing port in address`},
		{"zero pages", "memory_limit_pages: 0\n", "voxhost.yaml:1:21: ", "memory_limit_pages: must be between 1 and 65536 (64 KiB pages), got 0"},
		{"too many pages", "memory_limit_pages: 65537\n", "voxhost.yaml:1:21: ", "memory_limit_pages: must be between 1 and 65536"},
		{"log level", "log_level: verbose\n", "voxhost.yaml:1:12: ", `log_level: unknown level "verbose" (want debug, info, warn or error)`},
		{"zero max_calls", "limits:\n  max_calls: 0\n", "voxhost.yaml:2:14: ", "limits.max_calls: must be at least 1, got 0"},
		{"small messages", "limits:\n  max_message_bytes: 100\n", "voxhost.yaml:2:22: ", "limits.max_message_bytes: must be at least 512, got 100"},
		{"zero idle timeout", "limits:\n  idle_timeout: 0s\n", "voxhost.yaml:2:17: ", "limits.idle_timeout: must be positive, got 0s"},
		{"negative drain", "limits:\n  drain_timeout: -1s\n", "voxhost.yaml:2:18: ", "limits.drain_timeout: must not be negative, got -1s"},
		{"short frames", "limits:\n  max_frame_ms: 10\n", "voxhost.yaml:2:17: ", "limits.max_frame_ms: must be between 20 and 1000, got 10"},
		{"high water over max", "limits:\n  max_calls: 10\n  ready_high_water: 11\n", "voxhost.yaml:3:21: ", "limits.ready_high_water: must be between 1 and max_calls (10), got 11"},
		{"low water over high", "limits:\n  ready_high_water: 10\n  ready_low_water: 10\n", "voxhost.yaml:3:20: ", "limits.ready_low_water: must be below ready_high_water, got 10"},
		{"cpu over 100", "limits:\n  cpu_high_water_percent: 101\n", "voxhost.yaml:2:27: ", "limits.cpu_high_water_percent: must be between 0 (off) and 100, got 101"},
		{"cpu low over high", "limits:\n  cpu_high_water_percent: 60\n  cpu_low_water_percent: 60\n", "voxhost.yaml:3:26: ", "limits.cpu_low_water_percent: must be below cpu_high_water_percent (60), got 60"},
		{"cpu low without high", "limits:\n  cpu_high_water_percent: 0\n  cpu_low_water_percent: 50\n", "voxhost.yaml:3:26: ", "limits.cpu_low_water_percent: is set, but cpu_high_water_percent is 0, which turns CPU shedding off"},
		{"cpu wait low over high", "limits:\n  cpu_wait_high_water: 5ms\n  cpu_wait_low_water: 5ms\n", "voxhost.yaml:3:23: ", "limits.cpu_wait_low_water: must be below cpu_wait_high_water (5ms), got 5ms"},
		{"cpu wait low without high", "limits:\n  cpu_wait_high_water: 0s\n  cpu_wait_low_water: 1ms\n", "voxhost.yaml:3:23: ", "limits.cpu_wait_low_water: is set, but cpu_wait_high_water is 0, which turns the wait signal off"},
		{"negative setups", "limits:\n  max_concurrent_setups: -1\n", "voxhost.yaml:2:26: ", "limits.max_concurrent_setups: must not be negative (0 means one fewer than the cores), got -1"},
		{"zero setup wait", "limits:\n  setup_wait: 0s\n", "voxhost.yaml:2:15: ", "limits.setup_wait: must be positive, got 0s"},
		{"empty token", "auth:\n  tokens: [a, '']\n", "voxhost.yaml:2:15: ", "auth.tokens[1]: empty token"},
		{"unknown admin key", "admin:\n  listen: '127.0.0.1:9090'\n  token: [a]\n", "voxhost.yaml:3:3: ", `admin: unknown key "token" (want one of: allowed_hosts, insecure_no_token, listen, tokens, tokens_env)`},
		{"listen with a line break", "listen: 00\n\n  00\n", "voxhost.yaml:1:9: ", `listen: address "00\n00": missing port in address`},
		{"admin listen with a line break", "admin:\n  listen: \"a\\n:1\"\nlisten: \"a\\n:1\"\n", "voxhost.yaml:2:11: ", `admin.listen: "a\n:1" is also the call listener's address`},
		{"admin listen without port", "admin:\n  listen: localhost\n", "voxhost.yaml:2:11: ", `admin.listen: address "localhost": missing port in address`},
		{"admin on the call port", "listen: ':8080'\nadmin:\n  listen: ':8080'\n", "voxhost.yaml:3:11: ", `admin.listen: ":8080" is also the call listener's address`},
		{"empty admin token", "admin:\n  tokens: ['', b]\n", "voxhost.yaml:2:12: ", "admin.tokens[0]: empty token"},
		{"bad origin", "origins: [example.com, '[a']\n", "voxhost.yaml:1:24: ", `origins[1]: bad origin pattern "[a"`},
		{"host pattern with a port", "allowed_hosts: ['voice.example.com:443']\n", "voxhost.yaml:1:17: ", `allowed_hosts[0]: bad host pattern "voice.example.com:443"`},
		{"bad admin host pattern", "admin:\n  allowed_hosts: ['[a']\n", "voxhost.yaml:2:19: ", `admin.allowed_hosts[0]: bad host pattern "[a"`},
		{"no token and tokens", "admin:\n  tokens: [a]\n  insecure_no_token: true\n", "voxhost.yaml:3:22: ", "admin.insecure_no_token: is set, but so are admin tokens"},
		{"zero read timeout", "http:\n  read_timeout: 0s\n", "voxhost.yaml:2:17: ", "http.read_timeout: must be positive, got 0s"},
		{"header cap over net/http's", "http:\n  max_header_bytes: 2000000\n", "voxhost.yaml:2:21: ", "http.max_header_bytes: must be between 1024 and 1048576, got 2000000"},
		{"negative conns per ip", "http:\n  max_conns_per_ip: -1\n", "voxhost.yaml:2:21: ", "http.max_conns_per_ip: must not be negative"},
		{"missing default", "pipelines:\n  b: [{plugin: gain}]\n  a: [{plugin: gain}]\n", "voxhost.yaml:2:3: ", "pipelines: there are 2 pipelines, so default_pipeline must name one of: a, b"},
		{"default names no pipeline", "default_pipeline: mian\n" + stage, "voxhost.yaml:1:19: ", `default_pipeline: no pipeline named "mian" (pipelines: main)`},
		{"default without pipelines", "default_pipeline: main\n", "voxhost.yaml:1:19: ", `default_pipeline: no pipeline named "main" (pipelines: none defined)`},
		{"empty pipeline list", "pipelines:\n  main: []\n", "voxhost.yaml:2:9: ", "pipelines.main: no stages"},
		{"null pipeline", "pipelines:\n  main:\n", "voxhost.yaml:2:3: ", "pipelines.main: no stages"},
		{"stage without plugin", "pipelines:\n  main:\n    - plugin: gain\n    - config: {db: 1}\n      on_error: bypass\n", "voxhost.yaml:4:7: ", "pipelines.main[1].plugin: missing"},
		{"empty plugin", "pipelines:\n  main:\n    - plugin: ''\n", "voxhost.yaml:3:15: ", "pipelines.main[0].plugin: missing"},

		// Routes.
		{"unknown route key", "pipelines:\n  bot:\n    inbund: [{plugin: gain}]\n", "voxhost.yaml:3:5: ", `pipelines.bot: unknown key "inbund" (want one of: inbound, outbound, over_quota, recording, upstream)`},
		{"scalar for route", "pipelines:\n  main: gain\n", "voxhost.yaml:2:9: ", `pipelines.main: want a list of stages, or a mapping of inbound, outbound and upstream, got string "gain"`},
		{"route without inbound", "pipelines:\n  bot:\n    outbound: [{plugin: gain}]\n", "voxhost.yaml:3:5: ", "pipelines.bot.inbound: no stages; list at least one plugin (passthrough"},
		{"empty inbound", "pipelines:\n  bot:\n    inbound: []\n", "voxhost.yaml:3:14: ", "pipelines.bot.inbound: no stages"},
		{"outbound stage without plugin", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    outbound:\n      - config: {db: 1}\n", "voxhost.yaml:5:9: ", "pipelines.bot.outbound[0].plugin: missing"},
		{"scalar for upstream", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    upstream: wss://bot\n", "voxhost.yaml:4:15: ", "pipelines.bot.upstream: want a mapping, got string"},
		{"unknown upstream key", relay + "      protocl: twilio\n", "voxhost.yaml:6:7: ", `pipelines.bot.upstream: unknown key "protocl" (want one of: codec, connect_timeout, headers, on_failure, options, protocol, rate, url)`},
		{"missing url", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    upstream:\n      protocol: twilio\n", "voxhost.yaml:5:7: ", "pipelines.bot.upstream.url: missing; give the bot's ws:// or wss:// URL"},
		{"string rate", relay + "      protocol: twilio\n      rate: 8kHz\n", "voxhost.yaml:7:13: ", `pipelines.bot.upstream.rate: want an integer, got string "8kHz"`},
		{"number option", relay + "      protocol: twilio\n      options: {temperature: 0.8}\n", "voxhost.yaml:7:30: ", `pipelines.bot.upstream.options.temperature: want a string, got float 0.8`},
		{"missing env var", relay + "      protocol: twilio\n      headers:\n        Authorization: \"Bearer ${VOXHOST_TEST_UNSET}\"\n", "voxhost.yaml:8:24: ", "pipelines.bot.upstream.headers.Authorization: environment variable VOXHOST_TEST_UNSET is not set"},
		{"bad header name", relay + "      protocol: twilio\n      headers: {\"X Key\": v}\n", "voxhost.yaml:7:26: ", `pipelines.bot.upstream.headers."X Key": "X Key" is not a header name`},
		{"handshake header", relay + "      protocol: twilio\n      headers: {upgrade: h2c}\n", "voxhost.yaml:7:26: ", "pipelines.bot.upstream.headers.upgrade: the WebSocket handshake sets Upgrade itself"},
		{"header twice", relay + "      protocol: twilio\n      headers: {X-Key: a, x-key: b}\n", "voxhost.yaml:7:34: ", "pipelines.bot.upstream.headers.x-key: header x-key is given twice, also as X-Key (header names ignore case)"},
		{"headers list", relay + "      protocol: twilio\n      headers: [Authorization]\n", "voxhost.yaml:7:16: ", "pipelines.bot.upstream.headers: want a mapping, got sequence"},
		{"zero connect timeout", relay + "      protocol: twilio\n      connect_timeout: 0s\n", "voxhost.yaml:7:24: ", "pipelines.bot.upstream.connect_timeout: must be positive, got 0s"},
		{"on_failure", relay + "      protocol: twilio\n      on_failure: retry\n", "voxhost.yaml:7:19: ", `pipelines.bot.upstream.on_failure: unknown on_failure policy "retry" (want end_call or echo)`},

		// Playout and stalls.
		{"unknown playout key", "playout:\n  queu: 1s\n", "voxhost.yaml:2:3: ", `playout: unknown key "queu" (want one of: queue, send_ahead)`},
		{"short playout queue", "playout:\n  queue: 10ms\n", "voxhost.yaml:2:10: ", "playout.queue: must be at least 20ms (one frame), got 10ms"},
		{"negative send ahead", "playout:\n  send_ahead: -1s\n", "voxhost.yaml:2:15: ", "playout.send_ahead: must not be negative (0 paces every caller at real time), got -1s"},
		{"zero stall timeout", "limits:\n  stall_timeout: 0s\n", "voxhost.yaml:2:18: ", "limits.stall_timeout: must be positive, got 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("voxhost.yaml", []byte(tc.data))
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.data)
			}
			got := err.Error()
			if !strings.HasPrefix(got, tc.prefix) || !strings.Contains(got[len(tc.prefix):], tc.msg) {
				t.Errorf("got  %s\nwant %s...%s...", got, tc.prefix, tc.msg)
			}
			if strings.Contains(got, "\n") {
				t.Errorf("error spans several lines:\n%s", got)
			}
		})
	}
}

func TestLoadNamesFile(t *testing.T) {
	path := t.TempDir() + "/voxhost.yaml"
	if err := os.WriteFile(path, []byte("limits:\n  max_calls: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(path)
	if want := path + ":2:14: limits.max_calls: must be at least 1, got 0"; err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

// refuse is a Checker that refuses the plugin or protocol named "bad", at
// the key it names.
type refuse struct{}

func (refuse) CheckStage(st config.Stage) (string, error) {
	if st.Plugin == "bad" {
		return "plugin", errors.New("refused by the checker")
	}
	return "", nil
}

func (refuse) CheckUpstream(u *config.Upstream) (string, error) {
	if u.Protocol == "bad" {
		return "protocol", errors.New("refused by the checker")
	}
	return "", nil
}

// TestCheckerErrorsArePlaced: a Checker's error is reported at the key it
// names under the stage or upstream it was asked about, with that key's
// line, in each shape a route may have; without a Checker the same file
// loads.
func TestCheckerErrorsArePlaced(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"pipelines:\n  main:\n    - plugin: gain\n    - plugin: bad\n", "voxhost.yaml:4:15: pipelines.main[1].plugin: refused by the checker"},
		{"pipelines:\n  bot:\n    inbound: [{plugin: bad}]\n", "voxhost.yaml:3:24: pipelines.bot.inbound[0].plugin: refused by the checker"},
		{"pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    outbound: [{plugin: bad}]\n", "voxhost.yaml:4:25: pipelines.bot.outbound[0].plugin: refused by the checker"},
		{relay + "      protocol: bad\n", "voxhost.yaml:6:17: pipelines.bot.upstream.protocol: refused by the checker"},
	} {
		if _, err := config.ParseChecked("voxhost.yaml", []byte(tc.data), refuse{}); err == nil || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
		if _, err := config.Parse("voxhost.yaml", []byte(tc.data)); err != nil {
			t.Errorf("without a checker: %v", err)
		}
	}
}
