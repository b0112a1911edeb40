package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	gorilla "github.com/gorilla/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/internal/botsim"
	"github.com/voxhost/voxhost/internal/hosttest"
)

// captured keeps every message a simulator received from the host, for
// the providers' schema check.
type captured struct {
	mu   sync.Mutex
	msgs map[string][]string // by protocol
}

func (c *captured) add(protocol string, _ bool, msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.msgs == nil {
		c.msgs = map[string][]string{}
	}
	c.msgs[protocol] = append(c.msgs[protocol], string(msg))
}

func (c *captured) of(protocol string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs[protocol]...)
}

// speechDialects are the speech-to-speech providers' dialects, each
// relayed to the simulator's schema-faithful server for it: the leg's
// format, the route's resampling stages and the options of a test call.
var speechDialects = []struct {
	protocol       string
	query          string // the simulator's agent settings, where the provider keeps them on its side
	format         codec.Format
	inbound, out   string
	options        map[string]string
	refusedQuery   string
	refusedOptions map[string]string // options the provider's server refuses, ending the bot leg
	reportsError   bool              // the server says why in a message before it closes
}{
	{botsim.ProtocolGemini, "", codec.Format{Encoding: codec.L16, Rate: 24000}, "resample to=24000", "resample to=8000",
		map[string]string{"model": "gemini-live-2.5-flash", "voice": "Puck", "language": "en-US",
			"instructions": "You answer calls for \"Acme\".", "transcripts": "true"},
		"", map[string]string{"model": "projects/p/locations/l/publishers/google/models/"}, false},
	{botsim.ProtocolDeepgram, "", codec.Format{Encoding: codec.L16, Rate: 16000}, "resample to=16000", "resample to=8000",
		map[string]string{"think_model": "gpt-4o-mini", "prompt": "You answer calls for \"Acme\".", "listen_model": "nova-3",
			"language": "en", "greeting": "Hello, Acme here."},
		"", map[string]string{"think_provider": "groq", "think_model": "llama-3.3-70b"}, true},
	{botsim.ProtocolElevenLabs, "?agent_id=agent_1&audio=pcm_16000", codec.Format{Encoding: codec.L16, Rate: 16000}, "resample to=16000", "resample to=8000",
		map[string]string{"first_message": "Hello, Acme here.", "prompt": "You answer calls for \"Acme\".", "language": "en",
			"voice_id": "21m00Tcm4TlvDq8ikWAM", "dynamic.customer": "Ada"},
		"?agent_id=agent_1&audio=pcm_16000&overrides=first_message", map[string]string{"prompt": "Be brief."}, true},
}

// TestRelayToSpeechToSpeechProviders relays a call over loopback to the
// simulator's server for each provider, which withholds its
// acknowledgement of the session set-up until the host has held the
// caller's first second and dropped what came after, counted (the
// server refuses audio before its acknowledgement): the caller's audio then
// reaches it through the route's resampler and comes back, echoed at the
// provider's rate, as what the caller hears, byte for byte as `voxhost
// run` of the two stages makes it. The provider's barge-in clears the
// caller; the host's (a plugin's clear on a key) is sent to the providers
// that take one; what the provider says besides audio reaches the caller
// as the bot's events, its unknown message is counted. A setting the
// provider refuses ends the call, counted, as does a provider that never
// acknowledges. Every message the host sent is kept for the schema check.
func TestRelayToSpeechToSpeechProviders(t *testing.T) {
	var sent captured
	for _, d := range speechDialects {
		t.Run(d.protocol, func(t *testing.T) {
			sim, url := botsim.Start(t, botsim.Config{Capture: sent.add, HoldAck: true})
			up := upstream(t, url+botsim.Paths[d.protocol]+d.query, d.protocol)
			// The test releases the acknowledgement once the host has held
			// a second of audio, however long a loaded machine takes.
			up.Format, up.Options, up.ConnectTimeout = d.format, d.options, time.Minute
			h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: testdataPlugin("clear_on_dtmf") + " | " + d.inbound, outbound: d.out, upstream: up}}, nil)
			c, callerAudio := callerSpeaks(t, h)
			// Held until the bound, then dropped: the speech and what
			// follows it up to a second, the rest counted.
			waitFor(t, func() bool {
				return strings.Contains(metrics(t, h), `voxhost_bot_held_frames_total{protocol="`+d.protocol+`",result="dropped"}`)
			})
			assertMetric(t, h, `voxhost_bot_held_frames_total{protocol="`+d.protocol+`",result="held"} 50`)
			waitSim(t, sim, func(c botsim.Call) bool { return len(c.Sessions) == 1 })
			calls := sim.Calls()
			if calls[0].Acknowledged || calls[0].AudioIn != 0 || !calls[0].Live {
				t.Fatalf("before its acknowledgement, the provider recorded %+v", calls[0])
			}
			id := calls[0].ID
			if err := sim.Acknowledge(id); err != nil {
				t.Fatal(err)
			}
			var heard []byte
			for len(heard) < len(callerAudio) {
				if typ, msg := readMessage(t, c); typ == websocket.MessageBinary {
					heard = append(heard, msg...)
				}
			}
			want := hosttest.OfflineUlaw(t, d.inbound+" | "+d.out, callerAudio)
			if !bytes.Equal(heard[:len(callerAudio)], want[:len(callerAudio)]) {
				t.Fatalf("the caller heard %d bytes that differ from the offline run of %q", len(callerAudio), d.inbound+" | "+d.out)
			}

			t0 := time.Now()
			if err := sim.Interrupt(id); err != nil {
				t.Fatal(err)
			}
			readCallerUntil(t, c, func(e callerEvent) bool { return e.Event == "clear" })
			cleared := time.Since(t0)

			writeText(t, c, `{"event":"dtmf","digit":"5"}`)
			assertMetric(t, h, `voxhost_barge_ins_total{source="plugin"} 1`)
			if d.protocol == botsim.ProtocolGemini { // the one provider with a message for it
				waitSim(t, sim, func(c botsim.Call) bool {
					return slices.ContainsFunc(c.Events, func(e botsim.Event) bool { return e.Type == "clientContent" })
				})
			}

			if err := sim.Narrate(id); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			readCallerUntil(t, c, func(e callerEvent) bool {
				if e.Event == "plugin" && e.Plugin == "bot" {
					got[e.Name] = string(e.Data)
				}
				return len(got) == 3
			})
			for name, want := range map[string]string{"caller_transcript": "Where is my order?", "bot_transcript": "Let me look it up.", "tool_call": `"lookup_order"`} {
				if !strings.Contains(got[name], want) {
					t.Errorf("the caller got the bot's %s %s, want it to say %s", name, got[name], want)
				}
			}
			assertMetric(t, h, `voxhost_bot_events_total{event="tool_call",protocol="`+d.protocol+`",result="delivered"} 1`)
			assertMetric(t, h, `voxhost_bot_unknown_messages_total{protocol="`+d.protocol+`"} 1`)

			rec := sim.Calls()[0]
			t.Logf("%s: the provider's barge-in cleared the caller in %v; it got %d messages (%d of audio, %d bytes) and sent %d bytes of audio",
				d.protocol, cleared, len(sent.of(d.protocol)), rec.AudioMessages, rec.AudioIn, rec.AudioOut)
			if d.protocol == botsim.ProtocolElevenLabs { // its ping, answered
				waitSim(t, sim, func(c botsim.Call) bool {
					return slices.ContainsFunc(c.Events, func(e botsim.Event) bool { return e.Type == "pong" && e.Value == "1" })
				})
			}
			c.Close(websocket.StatusNormalClosure, "")
		})
		t.Run(d.protocol+" refused", func(t *testing.T) {
			_, url := botsim.Start(t, botsim.Config{})
			up := upstream(t, url+botsim.Paths[d.protocol]+d.refusedQuery, d.protocol)
			up.Format, up.Options = d.format, d.refusedOptions
			h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: d.inbound, outbound: d.out, upstream: up}}, nil)
			c := dial(t, h.url+"/ws")
			defer c.CloseNow()
			if err := c.Write(context.Background(), websocket.MessageBinary, make([]byte, 160)); err != nil {
				t.Fatal(err)
			}
			assertMetric(t, h, `voxhost_upstream_failures_total{protocol="`+d.protocol+`",reason="closed"} 1`)
			if d.reportsError {
				assertMetric(t, h, `voxhost_bot_errors_total{protocol="`+d.protocol+`"} 1`)
			}
		})
		t.Run(d.protocol+" never acknowledged", func(t *testing.T) {
			_, url := botsim.Start(t, botsim.Config{HoldAck: true})
			up := upstream(t, url+botsim.Paths[d.protocol]+d.query, d.protocol)
			up.Format, up.Options, up.ConnectTimeout = d.format, d.options, time.Second
			h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: d.inbound, outbound: d.out, upstream: up}}, nil)
			c, _ := callerSpeaks(t, h)
			if ce := readClose(t, c); !strings.Contains(ce.Reason, "did not acknowledge the session") || !strings.Contains(ce.Reason, "within 1s") {
				t.Errorf("the caller was told %q", ce.Reason)
			}
			assertMetric(t, h, `voxhost_upstream_failures_total{protocol="`+d.protocol+`",reason="setup_timeout"} 1`)
		})
	}
	t.Run("elevenlabs-agent signed url", func(t *testing.T) { relayWithSignedURL(t, &sent) })
	checkProviderSchemas(t, &sent)
}

// relayWithSignedURL relays a call to a private ElevenLabs agent through
// a signed URL: the host asks get-signed-url with the key, then dials the
// URL it answers without the key. A wrong key fails the bot leg, counted,
// with the provider's reason.
func relayWithSignedURL(t *testing.T, sent *captured) {
	const key = "sk-test-4f1d"
	sim, url := botsim.Start(t, botsim.Config{Capture: sent.add, ElevenLabsKey: key})
	d := speechDialects[2]
	route := func(key string) *testHost {
		up := upstream(t, url+botsim.Paths[d.protocol]+d.query, d.protocol)
		up.Format, up.Header = d.format, http.Header{"Xi-Api-Key": {key}}
		up.Options = map[string]string{"signed_url": "true", "first_message": "Hello."}
		return newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: d.inbound, outbound: d.out, upstream: up}}, nil)
	}
	h := route(key)
	c, callerAudio := callerSpeaks(t, h)
	heard := 0
	for heard < len(callerAudio) {
		if typ, msg := readMessage(t, c); typ == websocket.MessageBinary {
			heard += len(msg)
		}
	}
	rec := sim.Calls()[0]
	if !strings.Contains(rec.URL, "conversation_signature=") || rec.Header.Get("Xi-Api-Key") != "" {
		t.Errorf("the host dialled %s with the key header %q; want the signed url, without the key", rec.URL, rec.Header.Get("Xi-Api-Key"))
	}
	c.Close(websocket.StatusNormalClosure, "")

	h = route("sk-wrong")
	c = dial(t, h.url+"/ws")
	defer c.CloseNow()
	if ce := readClose(t, c); ce.Reason != "the voice bot cannot be reached" {
		t.Errorf("with a wrong key the caller was told %q", ce.Reason)
	}
	assertMetric(t, h, `voxhost_upstream_failures_total{protocol="elevenlabs-agent",reason="signed_url"} 1`)
}

// callerEvent is a raw caller's text message, as far as these tests read
// it.
type callerEvent struct {
	Event, Plugin, Name string
	Data                json.RawMessage
}

// readCallerUntil reads the caller's text messages until done says so.
func readCallerUntil(t *testing.T, c *websocket.Conn, done func(callerEvent) bool) {
	t.Helper()
	for {
		typ, msg := readMessage(t, c)
		var e callerEvent
		if typ == websocket.MessageText && json.Unmarshal(msg, &e) == nil && done(e) {
			return
		}
	}
}

// readClose reads the caller's messages until the host closes the socket,
// and returns the close.
func readClose(t *testing.T, c *websocket.Conn) websocket.CloseError {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		var ce websocket.CloseError
		if _, _, err := c.Read(ctx); asCloseError(err, &ce) {
			return ce
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// waitSim waits until the simulator's one call satisfies cond.
func waitSim(t *testing.T, sim *botsim.Sim, cond func(botsim.Call) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if calls, err := sim.Wait(ctx, func(calls []botsim.Call) bool { return len(calls) == 1 && cond(calls[0]) }); err != nil {
		t.Fatalf("%v; the simulator recorded %+v", err, calls)
	}
}

// providerTypes names, for each speech dialect, the provider's published
// types every JSON message voxhost sends it must satisfy, with $ for the
// module, and the module (testdata/providers/package.json pins the
// versions).
var providerTypes = map[string]struct{ module, typ string }{
	botsim.ProtocolGemini:   {"@google/genai", "$.LiveClientMessage"},
	botsim.ProtocolDeepgram: {"@deepgram/sdk", "$.agent.AgentV1Settings | $.agent.AgentV1KeepAlive"},
	botsim.ProtocolElevenLabs: {"@elevenlabs/types",
		"$.Outgoing.ConversationInitiationClientToOrchestratorEvent | $.Outgoing.UserAudio | $.Outgoing.PongClientToOrchestratorEvent"},
}

// maxOfAShape bounds the messages type-checked that begin alike (the
// first shapePrefix bytes): audio repeats one shape thousands of times,
// and every other kind of message is checked whenever it came.
const (
	maxOfAShape = 10
	shapePrefix = 24
)

// wireType is the JSON a TypeScript type describes: an enum is its string
// values (the SDKs' enums are string enums), every other type itself,
// member by member, so that an object literal with a member the type
// does not have is an error.
const wireType = "type Wire<T> = T extends string ? `${T}` : T extends number | boolean | null | undefined ? T : " +
	"T extends readonly (infer U)[] ? Wire<U>[] : T extends object ? { [K in keyof T]: Wire<T[K]> } : T;\n"

// checkProviderSchemas type-checks every JSON message the host sent each
// provider against the provider's own TypeScript types with tsc, from npm
// (installed on first use with npm ci into testdata/providers). Without
// node it skips, unless VOXHOST_EXAMPLES_REQUIRED (make test) says the
// toolchains are there.
func checkProviderSchemas(t *testing.T, sent *captured) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("VOXHOST_EXAMPLES_REQUIRED") != "" {
			t.Fatal("node is needed for the providers' schema check (make toolchains installs it)")
		}
		t.Skip("no node: the providers' schema check needs it")
	}
	dir, err := filepath.Abs("testdata/providers")
	if err != nil {
		t.Fatal(err)
	}
	npmCI(t, dir)
	check, err := os.MkdirTemp(dir, ".check-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(check) })
	var src strings.Builder
	src.WriteString(wireType)
	count, shapes := map[string]int{}, map[string]int{}
	for _, protocol := range slices.Sorted(maps.Keys(providerTypes)) {
		pt := providerTypes[protocol]
		ns := typeAlias(protocol) + "_types"
		fmt.Fprintf(&src, "import type * as %s from %q;\ntype %s = %s;\n", ns, pt.module, typeAlias(protocol), strings.ReplaceAll(pt.typ, "$", ns))
		// The check can fail: a type that resolved to any, or took any
		// object, would leave this expected error unused, which tsc
		// reports.
		fmt.Fprintf(&src, "// @ts-expect-error\nconst %s_bad: Wire<%s> = {\"no_such_member\": 1};\n", typeAlias(protocol), typeAlias(protocol))
		for _, msg := range sent.of(protocol) {
			shape := protocol + msg[:min(len(msg), shapePrefix)]
			if !json.Valid([]byte(msg)) || shapes[shape] == maxOfAShape {
				continue // binary audio, or enough of its shape
			}
			shapes[shape]++
			fmt.Fprintf(&src, "const %s%d: Wire<%s> = %s;\n", typeAlias(protocol), count[protocol], typeAlias(protocol), msg)
			count[protocol]++
		}
		if count[protocol] == 0 {
			t.Errorf("%s: no message captured to check", protocol)
		}
	}
	file := filepath.Join(check, "sent.ts")
	if err := os.WriteFile(file, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(dir, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict", "--skipLibCheck",
		"--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", file)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the messages voxhost sent violate the providers' types: %v\n%s", err, out)
	}
	t.Logf("type-checked against the providers' types: %v messages", count)
}

// typeAlias names a provider's type in the checked file.
func typeAlias(protocol string) string { return strings.ReplaceAll(protocol, "-", "_") }

// npmCI installs testdata/providers' pinned packages unless the lock's
// copy in node_modules says they already are: npm ci removes and
// reinstalls node_modules, so running it every time would be slow, not
// wrong.
func npmCI(t *testing.T, dir string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lock, installed struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	_ = json.Unmarshal(want, &lock)
	if have, err := os.ReadFile(filepath.Join(dir, "node_modules/.package-lock.json")); err == nil && json.Unmarshal(have, &installed) == nil {
		same := true
		for p, v := range lock.Packages {
			if p != "" && installed.Packages[p].Version != v.Version {
				same = false
			}
		}
		if same {
			return
		}
	}
	cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

// TestABotsEventsAreBounded has a Deepgram agent flood the host with
// transcripts, 200 at once, and send a tool call whose arguments are over
// the bound on an event: the host passes on the budget's worth (50 at
// once, then 25 a second: the 200 would have to take over 6 s to fit),
// drops the rest and the tool call, counted, and the call goes on.
func TestABotsEventsAreBounded(t *testing.T) {
	bot := startBot(t, func(conn *gorilla.Conn) {
		if _, _, err := conn.ReadMessage(); err != nil { // Settings
			return
		}
		conn.WriteMessage(gorilla.TextMessage, []byte(`{"type":"SettingsApplied"}`))
		for i := range 200 {
			conn.WriteMessage(gorilla.TextMessage, fmt.Appendf(nil, `{"type":"ConversationText","role":"user","content":"word %d"}`, i))
		}
		args, _ := json.Marshal(strings.Repeat("x", 9<<10))
		conn.WriteMessage(gorilla.TextMessage, fmt.Appendf(nil, `{"type":"FunctionCallRequest","functions":[{"id":"c1","name":"f","arguments":%s,"client_side":true}]}`, args))
		conn.WriteMessage(gorilla.BinaryMessage, bytes.Repeat([]byte{0x42}, 160))
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	})
	up := upstream(t, bot.url, botsim.ProtocolDeepgram)
	up.Options = map[string]string{"think_model": "gpt-4o-mini"}
	h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: "passthrough", upstream: up}}, nil)
	c, _ := callerSpeaks(t, h)
	delivered := 0
	for {
		typ, msg := readMessage(t, c)
		if typ == websocket.MessageBinary && msg[0] == 0x42 {
			break // the agent's audio, after all it said
		}
		if typ == websocket.MessageText && strings.Contains(string(msg), `"name":"caller_transcript"`) {
			delivered++
		}
	}
	m := metrics(t, h)
	if !strings.Contains(m, `voxhost_bot_events_total{event="tool_call",protocol="deepgram-agent",result="dropped_size"} 1`) ||
		!strings.Contains(m, `voxhost_bot_events_total{event="caller_transcript",protocol="deepgram-agent",result="dropped_rate"}`) ||
		!strings.Contains(m, fmt.Sprintf(`voxhost_bot_events_total{event="caller_transcript",protocol="deepgram-agent",result="delivered"} %d`, delivered)) {
		t.Errorf("the caller got %d transcripts; the host counted:\n%s", delivered, grepLines(m, "voxhost_bot_events_total"))
	}
	if delivered < 50 || delivered >= 200 {
		t.Errorf("%d of the 200 transcripts delivered, want the burst of 50 and what the rate refilled", delivered)
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
