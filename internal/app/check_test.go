package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/httpguard"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/internal/app"
)

// relay begins a relay route whose upstream url is on line 5: cases add
// the upstream's other keys from line 6.
const relay = "pipelines:\n  bot:\n    inbound: [{plugin: passthrough}]\n    upstream:\n      url: wss://bot.example.com/ws\n"

// TestCheckerErrorsHaveTheirLine: what app.Checker finds in the runtime's
// vocabulary (failure policies, budgets, protocols, codecs, URL templates,
// options) is reported at the file's line and column as config's own
// errors are, on one line.
func TestCheckerErrorsHaveTheirLine(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		// prefix is the exact "file:line:col: " start of the error and msg
		// a substring of the rest.
		prefix, msg string
	}{
		{"on_error", "pipelines:\n  main:\n    - plugin: gain\n      on_error: retry\n", "voxhost.yaml:4:17: ", `pipelines.main[0].on_error: unknown on_error policy "retry" (want bypass or end_call)`},
		{"outbound on_error", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    outbound: [{plugin: gain, on_error: retry}]\n", "voxhost.yaml:4:41: ", `pipelines.bot.outbound[0].on_error: unknown on_error policy "retry"`},
		{"missing protocol", relay, "voxhost.yaml:5:7: ", "pipelines.bot.upstream.protocol: missing; name one of: "},
		{"unknown protocol", relay + "      protocol: twillio\n", "voxhost.yaml:6:17: ", `pipelines.bot.upstream.protocol: unknown upstream protocol "twillio" (have `},
		{"http url", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    upstream:\n      url: https://bot.example.com/ws\n", "voxhost.yaml:5:12: ", `pipelines.bot.upstream.url: upstream url "https://bot.example.com/ws": scheme must be ws or wss, not "https"`},
		{"unknown placeholder", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    upstream:\n      url: wss://bot.example.com/{callid}\n", "voxhost.yaml:5:12: ", "unknown placeholder {callid}"},
		{"placeholder in the host", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    upstream:\n      url: ws://10.255.255.{param.n}:18091/region\n", "voxhost.yaml:5:12: ", "pipelines.bot.upstream.url: upstream url \"ws://10.255.255.{param.n}:18091/region\": placeholder {param.n} in the host; placeholders may stand only in the path and query"},
		{"placeholder in the port", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    upstream:\n      url: ws://127.0.0.1:{param.port}/p\n", "voxhost.yaml:5:12: ", "placeholder {param.port} in the port"},
		{"dot segment", "pipelines:\n  bot:\n    inbound: [{plugin: gain}]\n    upstream:\n      url: ws://bot.example.com/a/../{call_id}\n", "voxhost.yaml:5:12: ", "the path would have a dot segment"},
		{"unknown codec", relay + "      protocol: twilio\n      codec: opus\n", "voxhost.yaml:7:14: ", `pipelines.bot.upstream.codec: unknown codec "opus" (want mulaw, alaw or l16)`},
		{"rate for the codec", relay + "      protocol: twilio\n      codec: mulaw\n      rate: 16000\n", "voxhost.yaml:8:13: ", "pipelines.bot.upstream.rate: μ-law is carried at 8000 Hz only, not 16000"},
		{"codec for the protocol", relay + "      protocol: twilio\n      codec: l16\n", "voxhost.yaml:7:14: ", "pipelines.bot.upstream.codec: protocol twilio cannot carry 16 kHz L16"},
		{"rate for the protocol", relay + "      protocol: twilio\n      codec: l16\n      rate: 8000\n", "voxhost.yaml:8:13: ", "pipelines.bot.upstream.rate: protocol twilio cannot carry 8 kHz L16"},
		{"unknown option", relay + "      protocol: twilio\n      options: {voice: alloy}\n", "voxhost.yaml:7:17: ", `pipelines.bot.upstream.options: the twilio dialect takes no options (got "voice")`},
		{"budget over the most", "pipelines:\n  main:\n    - plugin: gain\n      budget_ms: 60001\n", "voxhost.yaml:4:18: ", "pipelines.main[0].budget_ms: must be a whole number of milliseconds from 1 to 60000, got 60001"},
	} {
		_, err := config.ParseChecked("voxhost.yaml", []byte(tc.data), app.Checker{})
		if got := fmt.Sprint(err); err == nil || !strings.HasPrefix(got, tc.prefix) || !strings.Contains(got[len(tc.prefix):], tc.msg) || strings.Contains(got, "\n") {
			t.Errorf("%s: got  %v\nwant %s...%s... on one line", tc.name, err, tc.prefix, tc.msg)
		}
	}
}

// TestUnknownProtocolListsTheKnownOnes: the error names every registered
// dialect, so a typo is one look away from its fix.
func TestUnknownProtocolListsTheKnownOnes(t *testing.T) {
	_, err := config.ParseChecked("voxhost.yaml", []byte(relay+"      protocol: twillio\n"), app.Checker{})
	if err == nil || !strings.Contains(err.Error(), `unknown upstream protocol "twillio" (have `) || !strings.Contains(err.Error(), "twilio)") && !strings.Contains(err.Error(), "twilio,") {
		t.Errorf("got %v, want the known protocols listed", err)
	}
}

// TestConfigDefaultsAreTheRuntimes: config, a leaf, writes the defaults of
// the runtime it describes again; they must stay the runtime's own.
func TestConfigDefaultsAreTheRuntimes(t *testing.T) {
	d := config.Default()
	for _, v := range []struct {
		key       string
		got, want any
	}{
		{"memory_limit_pages", d.MemoryLimitPages, uint32(plugin.DefaultMemoryLimitPages)},
		{"plugin_limits.compile_timeout", d.PluginLimits.CompileTimeout, plugin.DefaultCompileTimeout},
		{"plugin_limits.init_budget", d.PluginLimits.InitBudget, plugin.DefaultInitBudget},
		{"limits.max_calls", d.Limits.MaxCalls, server.DefaultMaxCalls},
		{"limits.max_message_bytes", d.Limits.MaxMessageBytes, server.DefaultMaxMessageBytes},
		{"limits.max_frame_ms", d.Limits.MaxFrameMs, server.DefaultMaxFrameMs},
		{"limits.idle_timeout", d.Limits.IdleTimeout, server.DefaultIdleTimeout},
		{"limits.drain_timeout", d.Limits.DrainTimeout, server.DefaultDrainTimeout},
		{"limits.stall_timeout", d.Limits.StallTimeout, server.DefaultStallTimeout},
		{"playout.queue", d.Playout.Queue, server.DefaultPlayoutQueue},
		{"playout.send_ahead", d.Playout.SendAhead, server.DefaultSendAhead},
		{"http.read_header_timeout", d.HTTP.ReadHeaderTimeout, httpguard.DefaultReadHeaderTimeout},
		{"http.read_timeout", d.HTTP.ReadTimeout, httpguard.DefaultReadTimeout},
		{"http.idle_timeout", d.HTTP.IdleTimeout, httpguard.DefaultIdleTimeout},
		{"http.max_header_bytes", d.HTTP.MaxHeaderBytes, httpguard.DefaultMaxHeaderBytes},
	} {
		if v.got != v.want {
			t.Errorf("%s: config's default is %v, the runtime's %v", v.key, v.got, v.want)
		}
	}
	// A zero module limit is the runtime's default.
	if d.PluginLimits.Module != (config.ModuleLimits{}) {
		t.Errorf("plugin_limits: %+v, want zeros (the runtime's defaults)", d.PluginLimits.Module)
	}
}
