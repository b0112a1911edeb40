package botsim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/transport"
	"github.com/voxhost/voxhost/internal/botsim"
)

// speechProviders are the simulator's speech providers, each with a
// format and options its dialect takes, and the words of its refusal of
// audio sent before its acknowledgement.
var speechProviders = []struct {
	dialect string
	f       codec.Format
	opts    map[string]string
	early   string
}{
	{botsim.ProtocolGemini, codec.Format{Encoding: codec.L16, Rate: 24000}, map[string]string{"model": "gemini-live-2.5-flash"}, "before setupComplete"},
	{botsim.ProtocolDeepgram, codec.Telephony, map[string]string{"think_model": "gpt-4o-mini"}, "audio before SettingsApplied"},
	{botsim.ProtocolElevenLabs, codec.Telephony, nil, "user_audio_chunk before conversation_initiation_metadata"},
}

// A speech provider refuses audio sent before its acknowledgement of the
// session set-up, as a client that does not wait for it would send;
// released, the acknowledgement lets the audio through.
func TestSpeechProvidersRefuseAudioBeforeTheirAcknowledgement(t *testing.T) {
	for _, p := range speechProviders {
		t.Run(p.dialect, func(t *testing.T) {
			sim, url := botsim.Start(t, botsim.Config{HoldAck: true})
			frame := bytes.Repeat([]byte{0x55, 0x01}, 10*p.f.BytesPerMs()/2)

			early := openBot(t, url+botsim.Paths[p.dialect], p.dialect, p.f, p.opts)
			waitCall(t, sim, func(c botsim.Call) bool { return len(c.Sessions) == 1 })
			typ, msg := early.sess.Audio(frame)
			if err := early.send(typ, msg); err != nil {
				t.Fatal(err)
			}
			if rec := waitCall(t, sim, func(c botsim.Call) bool { return !c.Live }); !strings.Contains(rec.Err, p.early) || rec.AudioIn != 0 {
				t.Fatalf("audio before the acknowledgement: the call ended with %q after %d bytes, want %q", rec.Err, rec.AudioIn, p.early)
			}

			sim, url = botsim.Start(t, botsim.Config{HoldAck: true})
			b := openBot(t, url+botsim.Paths[p.dialect], p.dialect, p.f, p.opts)
			rec := waitCall(t, sim, func(c botsim.Call) bool { return len(c.Sessions) == 1 })
			if rec.Acknowledged {
				t.Fatal("acknowledged before its release")
			}
			if err := sim.Acknowledge(rec.ID); err != nil {
				t.Fatal(err)
			}
			if in := b.next(); in.Kind != transport.KindReady {
				t.Fatalf("after the release: %v, want the acknowledgement", in.Kind)
			}
			typ, msg = b.sess.Audio(frame)
			if err := b.send(typ, msg); err != nil {
				t.Fatal(err)
			}
			if in := b.next(); in.Kind != transport.KindAudio || !bytes.Equal(in.Audio, frame) {
				t.Fatalf("got %v of %d bytes, want the frame back", in.Kind, len(in.Audio))
			}
		})
	}
}

// What a speech provider says besides audio reaches its dialect as the
// events of one shape, and its unknown message as Unknown.
func TestSpeechProvidersNarrate(t *testing.T) {
	for _, p := range speechProviders {
		t.Run(p.dialect, func(t *testing.T) {
			sim, url := botsim.Start(t, botsim.Config{})
			b := dialBot(t, url+botsim.Paths[p.dialect], p.dialect, p.f, p.opts)
			if err := sim.Narrate(sim.Calls()[0].ID); err != nil {
				t.Fatal(err)
			}
			var names []string
			for len(names) < 3 {
				_, msg, err := b.conn.Read(ctx(t))
				if err != nil {
					t.Fatal(err)
				}
				var in transport.Inbound
				if err := b.sess.Decode(transport.Text, msg, &in); err != nil {
					t.Fatal(err)
				}
				for _, e := range in.Events {
					names = append(names, e.Name)
					if !json.Valid(e.Data) || !bytes.Contains(e.Data, []byte("order")) && !bytes.Contains(e.Data, []byte("look it up")) {
						t.Errorf("%s: %s", e.Name, e.Data)
					}
				}
			}
			if !slices.Equal(names, transport.BotEventNames) {
				t.Errorf("events %v, want %v", names, transport.BotEventNames)
			}
			_, msg, err := b.conn.Read(ctx(t))
			var in transport.Inbound
			if err != nil || b.sess.Decode(transport.Text, msg, &in) != nil || !in.Unknown {
				t.Errorf("the message of no known type %q decoded as %+v (%v)", msg, in, err)
			}
		})
	}
}

// A private agent: the conversation socket takes the key or a signature
// get-signed-url handed out for the key, once; others get 401.
func TestElevenLabsSignedURLs(t *testing.T) {
	sim, url := botsim.Start(t, botsim.Config{ElevenLabsKey: "sk-test"})
	base := "http" + strings.TrimPrefix(url, "ws") + "/elevenlabs"
	get := func(path, key string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx(t), http.MethodGet, base+path, nil)
		if key != "" {
			req.Header.Set("xi-api-key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	if resp, body := get("/get-signed-url?agent_id=agent_1", "wrong"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(toJSON(body), "invalid_api_key") {
		t.Errorf("a wrong key: %v %v", resp.Status, body)
	}
	if resp, _ := get("/get-signed-url", "sk-test"); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("no agent: %v", resp.Status)
	}
	if resp, _ := get("?agent_id=agent_1", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the socket without key or signature: %v", resp.Status)
	}
	resp, body := get("/get-signed-url?agent_id=agent_1&audio=pcm_16000", "sk-test")
	signed, _ := body["signed_url"].(string)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(signed, url+"/elevenlabs?") || !strings.Contains(signed, "conversation_signature=") {
		t.Fatalf("signed: %v %v", resp.Status, body)
	}
	b := dialBot(t, signed, botsim.ProtocolElevenLabs, codec.Format{Encoding: codec.L16, Rate: 16000}, nil)
	b.conn.Close(websocket.StatusNormalClosure, "")
	if rec := waitCall(t, sim, func(c botsim.Call) bool { return !c.Live }); rec.Header.Get("xi-api-key") != "" || rec.Format.Rate != 16000 {
		t.Errorf("the signed call: key %q, format %v", rec.Header.Get("xi-api-key"), rec.Format)
	}
	if _, _, err := websocket.Dial(ctx(t), signed, nil); err == nil {
		t.Error("a signature used twice was taken")
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
