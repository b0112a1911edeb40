package config_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/internal/app"
)

func TestRoutes(t *testing.T) {
	t.Setenv("VOXHOST_TEST_BOT_TOKEN", "tok")
	t.Setenv("VOXHOST_TEST_A", "a")
	t.Setenv("VOXHOST_TEST_B", "b")
	data := `limits:
  stall_timeout: 2s
playout: {queue: 5s, send_ahead: 0s}
default_pipeline: bot
pipelines:
  echo: [{plugin: gain}]
  shaped:
    inbound: [{plugin: gain, config: {db: 3}}]
    outbound: [{plugin: passthrough}]
  bot:
    inbound:  [ {plugin: passthrough} ]
    outbound: [ {plugin: gain, config: {db: -3}} ]
    upstream:
      url: "wss://bot.example.com/media/{call_id}?stream={stream_id}&lang={param.lang}"
      protocol: twilio
      codec: mulaw
      rate: 8000
      headers: {Authorization: "Bearer ${VOXHOST_TEST_BOT_TOKEN}", x-kind: "${VOXHOST_TEST_A}-${VOXHOST_TEST_B}$"}
      connect_timeout: 1500ms
      on_failure: echo
  plain:
    inbound: [{plugin: passthrough}]
    upstream: {url: "ws://127.0.0.1:9000/", protocol: twilio}
`
	c, err := config.ParseChecked("voxhost.yaml", []byte(data), app.Checker{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.StallTimeout != 2*time.Second || c.Playout != (config.Playout{Queue: 5 * time.Second}) {
		t.Errorf("stall_timeout %v, playout %+v", c.Limits.StallTimeout, c.Playout)
	}
	echo := c.Pipelines["echo"]
	assertStages(t, echo.Inbound, "gain")
	if echo.Outbound != nil || echo.Upstream != nil {
		t.Errorf("a list of stages is an echo of inbound stages: %+v", echo)
	}
	shaped := c.Pipelines["shaped"]
	assertStages(t, shaped.Inbound, "gain db=3")
	assertStages(t, shaped.Outbound, "passthrough")
	if shaped.Upstream != nil {
		t.Errorf("shaped has an upstream: %+v", shaped.Upstream)
	}

	bot := c.Pipelines["bot"]
	assertStages(t, bot.Inbound, "passthrough")
	assertStages(t, bot.Outbound, "gain db=-3")
	want := config.Upstream{
		URL:      "wss://bot.example.com/media/{call_id}?stream={stream_id}&lang={param.lang}",
		Protocol: "twilio", Codec: "mulaw", Rate: 8000,
		Headers:        map[string]config.Secret{"Authorization": config.NewSecret("Bearer tok"), "x-kind": config.NewSecret("a-b$")},
		ConnectTimeout: 1500 * time.Millisecond,
		OnFailure:      config.OnFailureEcho,
	}
	if bot.Upstream == nil || !reflect.DeepEqual(*bot.Upstream, want) {
		t.Errorf("bot upstream:\ngot  %#v\nwant %#v", bot.Upstream, want)
	}

	// Left out, the codec and rate are 0 (which host/codec reads as μ-law
	// at 8 kHz) and a failure ends the call.
	plain := c.Pipelines["plain"].Upstream
	if plain.Protocol != "twilio" || plain.Codec != "" || plain.Rate != 0 || plain.OnFailure != "" || plain.ConnectTimeout != 0 || plain.Headers != nil {
		t.Errorf("plain upstream: %+v", plain)
	}
}

// TestHeaderValuesAreNotShown: a header's value, from the file or the
// environment, appears in no error, no printed or marshalled Config and no
// log line.
func TestHeaderValuesAreNotShown(t *testing.T) {
	const secret = "s3cret-abc"
	t.Setenv("VOXHOST_TEST_SECRET", secret)
	t.Setenv("VOXHOST_TEST_SECRET_NL", secret+"\r\nX-Injected: 1")
	t.Setenv("VOXHOST_TEST_EMPTY", "")
	for _, tc := range []struct{ headers, msg string }{
		{`{Authorization: "Bearer ${VOXHOST_TEST_SECRET_NL}"}`, "value holds a line break"},
		{`{Authorization: "` + secret + `${VOXHOST_TEST_UNSET}"}`, "environment variable VOXHOST_TEST_UNSET is not set"},
		{`{Authorization: "` + secret + `${VOXHOST_TEST_EMPTY}"}`, "environment variable VOXHOST_TEST_EMPTY is empty"},
		{`{Authorization: "` + secret + `${` + secret + `"}`, "a ${ without its }"},
		{`{Authorization: "${` + secret + `!}"}`, "does not hold a variable name"},
		{`{Authorization: 12345}`, "want a string, got int (the value is not shown)"},
		{`{Authorization: [` + secret + `]}`, "want a string, got sequence"},
		{`{"Bad Name": "${VOXHOST_TEST_SECRET}"}`, `"Bad Name" is not a header name`},
		{`{"X-A": "${VOXHOST_TEST_SECRET}", "x-a": "${VOXHOST_TEST_SECRET}"}`, "header x-a is given twice, also as X-A"},
	} {
		data := relay + "      protocol: twilio\n      headers: " + tc.headers + "\n"
		_, err := config.Parse("voxhost.yaml", []byte(data))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("headers %s: got %v, want %q", tc.headers, err, tc.msg)
			continue
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "12345") {
			t.Errorf("headers %s: the error shows the value: %v", tc.headers, err)
		}
	}

	c, err := config.Parse("voxhost.yaml", []byte(relay+"      protocol: twilio\n      headers: {Authorization: \"Bearer ${VOXHOST_TEST_SECRET}\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Pipelines["bot"].Upstream.Headers["Authorization"].Reveal(); got != "Bearer "+secret {
		t.Fatalf("Reveal() = %q", got)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "config", c, "upstream", c.Pipelines["bot"].Upstream)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "headers", c.Pipelines["bot"].Upstream.Headers)
	marshalled, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	u := *c.Pipelines["bot"].Upstream
	for _, shown := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(u), fmt.Sprintf("%+v", u), fmt.Sprintf("%#v", u), string(marshalled), logged.String()} {
		if strings.Contains(shown, secret) {
			t.Errorf("the secret shows in %s", shown)
		}
	}
	for _, shown := range []string{fmt.Sprint(u), fmt.Sprintf("%#v", u), string(marshalled), logged.String()} {
		if !strings.Contains(shown, "Authorization:[redacted]") && !strings.Contains(shown, `"Authorization":[redacted]`) && !strings.Contains(shown, `"Authorization":"[redacted]"`) {
			t.Errorf("the header is not shown as [redacted] in %s", shown)
		}
	}
}

// TestHeadersReadTheEnvironmentAtEachLoad: a reload (a second Parse) reads
// the variables again, so rotating a credential needs no restart.
func TestHeadersReadTheEnvironmentAtEachLoad(t *testing.T) {
	data := []byte(relay + "      protocol: twilio\n      headers: {Authorization: \"Bearer ${VOXHOST_TEST_ROTATED}\"}\n")
	for _, v := range []string{"one", "two"} {
		t.Setenv("VOXHOST_TEST_ROTATED", v)
		c, err := config.Parse("voxhost.yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Pipelines["bot"].Upstream.Headers["Authorization"].Reveal(); got != "Bearer "+v {
			t.Errorf("with %s: %q", v, got)
		}
	}
}

// TestExampleRelayRoute uncomments the example's relay route, which is
// commented out because it dials a bot that does not exist, and loads it.
func TestExampleRelayRoute(t *testing.T) {
	t.Setenv("BOT_TOKEN", "example-token")
	c, err := config.ParseChecked("voxhost.yaml", exampleWith(t, "  # bot:"), app.Checker{})
	if err != nil {
		t.Fatal(err)
	}
	bot, ok := c.Pipelines["bot"]
	if !ok || bot.Upstream == nil || len(bot.Outbound) == 0 {
		t.Fatalf("no relay route bot in the uncommented example: %+v", c.Pipelines)
	}
	if got := bot.Upstream.Headers["Authorization"].Reveal(); got != "Bearer example-token" {
		t.Errorf("Authorization = %q", got)
	}
}
