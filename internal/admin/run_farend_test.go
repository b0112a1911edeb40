package admin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/internal/signal"
)

// part is one file of a multipart POST /run.
type part struct {
	field, name string
	body        []byte
}

// runParts posts a multipart POST /run of parts, as curl -F sends it,
// and decodes the JSON answer.
func runParts(t *testing.T, h *host, query string, parts ...part) (int, map[string]any) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range parts {
		w, err := mw.CreateFormFile(p.field, p.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p.body)
	}
	mw.Close()
	req, err := http.NewRequest("POST", h.adminURL+"/run?"+query, &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("POST /run: %d, not JSON: %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// refsubRoute is a route "echo" of refsub, which subtracts the far-end
// reference from each frame (saturating).
func refsubRoute(t *testing.T) string {
	path, err := filepath.Abs("../../host/plugin/testdata/refsub.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return "  echo:\n    - plugin: " + path + "\n"
}

// TestRunWithAFarEnd posts a file and a far-end file as a multipart body:
// refsub's output must be the file less the far end, sample for sample,
// with the far end silent past its end (voxhost run --far-end's rule),
// computed here; and what the API cannot run is refused with the reason.
func TestRunWithAFarEnd(t *testing.T) {
	h := startHost(t, refsubRoute(t))
	in := signal.Speech(8000, 1)
	far := signal.Tone(8000, 440, 0.3, 0.6) // shorter: silence follows
	status, body := runParts(t, h, "pipeline=echo", part{"audio", "mic.wav", wavBytes(t, in, 8000)}, part{"far_end", "bot.wav", wavBytes(t, far, 8000)})
	if status != http.StatusOK {
		t.Fatalf("POST /run: %d %v", status, body)
	}
	got, x, r := signal.Samples(answerPCM(t, body)), signal.Samples(in), signal.Samples(far)
	if len(got) != len(x) {
		t.Fatalf("%d samples out for %d in", len(got), len(x))
	}
	for i := range x {
		want := int(x[i])
		if i < len(r) {
			want = max(-32768, min(32767, want-int(r[i])))
		}
		if int(got[i]) != want {
			t.Fatalf("sample %d: %d, want the input less the far end, %d", i, got[i], want)
		}
	}
	if body["far_end_ms"] != float64(600) || body["input_ms"] != float64(1000) || body["frames"] != float64(50) {
		t.Errorf("POST /run: far_end_ms %v, input_ms %v, frames %v", body["far_end_ms"], body["input_ms"], body["frames"])
	}

	wide := wavBytes(t, signal.Speech(16000, 0.2), 16000)
	long := wavBytes(t, signal.Silence(8000, 301000), 8000)
	mic := part{"audio", "mic.wav", wavBytes(t, in, 8000)}
	for _, tc := range []struct {
		name, query string
		parts       []part
		status      int
		msg         string
	}{
		{"no stage asks", "pipeline=p", []part{mic, {"far_end", "bot.wav", wavBytes(t, far, 8000)}}, http.StatusBadRequest,
			"far_end bot.wav: no inbound stage of pipeline p (flip.wasm) asks for the far-end reference"},
		{"far end at 16 kHz", "pipeline=echo", []part{mic, {"far_end", "wide.wav", wide}}, http.StatusBadRequest, "sox wide.wav -r 8000"},
		{"far end not a WAV", "pipeline=echo", []part{mic, {"far_end", "notes.wav", []byte("hello")}}, http.StatusBadRequest, "notes.wav: not a WAV file"},
		{"far end too long", "pipeline=echo", []part{mic, {"far_end", "long.wav", long}}, http.StatusRequestEntityTooLarge, "long.wav holds 5m1s of audio"},
		{"far end too big", "pipeline=echo", []part{mic, {"far_end", "big.wav", bytes.Repeat([]byte{0}, 9<<20)}}, http.StatusRequestEntityTooLarge,
			"big.wav: the upload is larger than the 8 MiB limit"},
		{"far end's format", "pipeline=echo", []part{mic, {"far_end", "bot.mp3", []byte("ID3")}}, http.StatusBadRequest, `far_end: bot.mp3: unsupported audio file extension ".mp3"`},
		{"unknown part", "pipeline=echo", []part{mic, {"mic", "x.wav", wavBytes(t, in, 8000)}}, http.StatusBadRequest, `unknown part "mic"`},
		{"no audio", "pipeline=echo", []part{{"far_end", "bot.wav", wavBytes(t, far, 8000)}}, http.StatusBadRequest, `the multipart body has no "audio" part`},
		{"audio twice", "pipeline=echo", []part{mic, mic}, http.StatusBadRequest, `the part "audio" comes twice`},
		{"empty far end", "pipeline=echo", []part{mic, {"far_end", "bot.wav", nil}}, http.StatusBadRequest, `bot.wav: the "far_end" part is empty`},
	} {
		status, body := runParts(t, h, tc.query, tc.parts...)
		if msg, _ := body["error"].(string); status != tc.status || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %d %q, want %d and %q", tc.name, status, msg, tc.status, tc.msg)
		}
	}
	// Both files may share a name: each is kept apart.
	if status, body := runParts(t, h, "pipeline=echo", part{"audio", "a.wav", wavBytes(t, in, 8000)}, part{"far_end", "a.wav", wavBytes(t, far, 8000)}); status != http.StatusOK {
		t.Errorf("two files named a.wav: %d %v", status, body)
	}
}

// TestPipelinesShowTheReferenceAndTheRecording: GET /pipelines says which
// stages ask for the far-end reference (what the console offers a far-end
// file for) and what a route records; the console API leaves out where the
// recordings are kept.
func TestPipelinesShowTheReferenceAndTheRecording(t *testing.T) {
	dir := t.TempDir()
	h := startHost(t, refsubRoute(t)+"  recorded:\n    inbound: [{plugin: flip}]\n    recording: {dir: "+dir+", what: [caller, reference]}\n"+
		"console: true\nauth:\n  tokens: ["+callToken+"]\n")
	status, body := h.admin("GET", "/pipelines", token, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /pipelines: %d %v", status, body)
	}
	routes := map[string]map[string]any{}
	for _, p := range body["pipelines"].([]any) {
		p := p.(map[string]any)
		routes[p["name"].(string)] = p
	}
	reference := func(route string) any { return routes[route]["stages"].([]any)[0].(map[string]any)["reference"] }
	if reference("echo") != true || reference("p") != nil {
		t.Errorf("stage reference: echo %v, p %v; want true and absent", reference("echo"), reference("p"))
	}
	rec, _ := routes["recorded"]["recording"].(map[string]any)
	if rec == nil || rec["dir"] != dir || jsonOf(t, rec["what"]) != `["caller","reference"]` || rec["max_seconds"] != float64(3600) || rec["min_free_bytes"] != float64(512<<20) {
		t.Errorf("recorded's recording: %v", rec)
	}
	if routes["p"]["recording"] != nil {
		t.Errorf("p records nothing, GET /pipelines says %v", routes["p"]["recording"])
	}

	req, _ := http.NewRequest("GET", h.url+"/console/api/pipelines", nil)
	req.Header.Set("Authorization", "Bearer "+callToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var listed struct {
		Pipelines []struct {
			Name      string         `json:"name"`
			Recording map[string]any `json:"recording"`
		} `json:"pipelines"`
	}
	if err := json.Unmarshal(raw, &listed); err != nil || resp.StatusCode != http.StatusOK || strings.Contains(string(raw), dir) {
		t.Fatalf("the console API's GET /pipelines: %d %s (%v); want no recording directory", resp.StatusCode, raw, err)
	}
	for _, p := range listed.Pipelines {
		if p.Name == "recorded" && jsonOf(t, p.Recording["what"]) != `["caller","reference"]` {
			t.Errorf("the console API's recorded route: %v; want its streams", p.Recording)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
