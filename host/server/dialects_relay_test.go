package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

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
// simulator's server for each provider: the caller's audio reaches it
// through the route's resampler and comes back, echoed at the provider's
// rate, as what the caller hears, byte for byte as `voxhost run` of the
// two stages makes it; the provider's barge-in clears the caller; a
// setting the provider refuses ends the call as a lost bot connection,
// counted. Every message the host sent is kept for the schema check.
func TestRelayToSpeechToSpeechProviders(t *testing.T) {
	var sent captured
	for _, d := range speechDialects {
		t.Run(d.protocol, func(t *testing.T) {
			sim, url := botsim.Start(t, botsim.Config{Capture: sent.add})
			up := upstream(t, url+botsim.Paths[d.protocol]+d.query, d.protocol)
			up.Format, up.Options = d.format, d.options
			h := newRoutesHost(t, plugin.Options{}, map[string]routeSpec{"main": {inbound: d.inbound, outbound: d.out, upstream: up}}, nil)
			c := dial(t, h.url+"/ws")
			defer c.CloseNow()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			callerAudio := ulawSpeech(0.6)
			for off := 0; off < len(callerAudio); off += 160 {
				if err := c.Write(ctx, websocket.MessageBinary, callerAudio[off:off+160]); err != nil {
					t.Fatal(err)
				}
			}
			go feedSilence(ctx, c)
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

			calls := sim.Calls()
			if len(calls) != 1 || len(calls[0].Sessions) != 1 {
				t.Fatalf("the provider recorded %+v", calls)
			}
			t0 := time.Now()
			if err := sim.Interrupt(calls[0].ID); err != nil {
				t.Fatal(err)
			}
			for {
				if typ, msg := readMessage(t, c); typ == websocket.MessageText && strings.Contains(string(msg), `"event":"clear"`) {
					break
				}
			}
			cleared := time.Since(t0)
			rec := sim.Calls()[0]
			t.Logf("%s: the provider's barge-in cleared the caller in %v; it got %d messages (%d of audio, %d bytes) and sent %d bytes of audio",
				d.protocol, cleared, len(sent.of(d.protocol)), rec.AudioMessages, rec.AudioIn, rec.AudioOut)
			if d.protocol == botsim.ProtocolElevenLabs { // its ping, answered
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if _, err := sim.Wait(wctx, func(calls []botsim.Call) bool {
					return slices.ContainsFunc(calls[0].Events, func(e botsim.Event) bool { return e.Type == "pong" && e.Value == "1" })
				}); err != nil {
					t.Fatalf("the agent's ping 1 got no pong: %v", err)
				}
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
	}
	checkProviderSchemas(t, &sent)
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
