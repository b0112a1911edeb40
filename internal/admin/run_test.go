package admin_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/signal"
)

// wavBytes is a WAV file of pcm at rate.
func wavBytes(t *testing.T, pcm []byte, rate int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.wav")
	if err := audiofile.WritePCM(path, pcm, rate); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// answerPCM is the processed audio of POST /run's answer body, read as
// the 8 kHz WAV file it must be.
func answerPCM(t *testing.T, body map[string]any) []byte {
	t.Helper()
	wav, err := base64.StdEncoding.DecodeString(body["wav"].(string))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.wav")
	if err := os.WriteFile(out, wav, 0o644); err != nil {
		t.Fatal(err)
	}
	pcm, rate, err := audiofile.ReadPCM(out)
	if err != nil || rate != 8000 {
		t.Fatalf("the answer's WAV: %d Hz, %v", rate, err)
	}
	return pcm
}

// TestRun runs a file through a route as voxhost run would, and refuses
// what it cannot run with the reason.
func TestRun(t *testing.T) {
	h := startHost(t, "")
	in := signal.Speech(8000, 1)
	status, body := h.admin("POST", "/run?pipeline=p&name=speech.wav", token, wavBytes(t, in, 8000))
	if status != http.StatusOK {
		t.Fatalf("POST /run: %d %v", status, body)
	}
	pcm := answerPCM(t, body)
	// flip negates every sample.
	got, want := signal.Samples(pcm), signal.Samples(in)
	if len(got) != len(want) {
		t.Fatalf("%d samples out for %d in", len(got), len(want))
	}
	for i := range want {
		if got[i] != -want[i] && !(want[i] == -32768 && got[i] == 32767) {
			t.Fatalf("sample %d: %d, want %d negated", i, got[i], want[i])
		}
	}
	delete(body, "wav")
	if body["frames"] != float64(50) || body["input_ms"] != float64(1000) || fmt.Sprint(body["stages"]) != "[flip.wasm]" || body["direction"] != "inbound" {
		t.Errorf("POST /run: %v", body)
	}

	for _, tc := range []struct {
		name, query, tok string
		body             []byte
		status           int
		msg              string
	}{
		{"no token", "pipeline=p", "", wavBytes(t, in, 8000), http.StatusUnauthorized, "missing admin token"},
		{"unknown pipeline", "pipeline=q", token, wavBytes(t, in, 8000), http.StatusNotFound, `unknown pipeline "q" (have p)`},
		{"no outbound stages", "pipeline=p&direction=outbound", token, wavBytes(t, in, 8000), http.StatusBadRequest, "pipeline p has no outbound stages"},
		{"bad direction", "direction=sideways", token, wavBytes(t, in, 8000), http.StatusBadRequest, `direction "sideways": want inbound or outbound`},
		{"empty", "name=a.wav", token, nil, http.StatusBadRequest, "the request body is empty"},
		{"not a WAV", "name=notes.wav", token, []byte("hello there"), http.StatusBadRequest, `notes.wav: not a WAV file`},
		{"wrong rate", "name=wide.wav", token, wavBytes(t, signal.Speech(16000, 0.2), 16000), http.StatusBadRequest, "sox wide.wav -r 8000"},
		{"unknown extension", "name=song.mp3", token, []byte("ID3"), http.StatusBadRequest, `unsupported audio file extension ".mp3"`},
		{"too long", "", token, wavBytes(t, signal.Silence(8000, 301000), 8000), http.StatusRequestEntityTooLarge, "holds 5m1s of audio; POST /run takes at most 5m0s"},
		{"too big", "", token, bytes.Repeat([]byte{0}, 9<<20), http.StatusRequestEntityTooLarge, "larger than the 8 MiB limit"},
	} {
		status, body := h.admin("POST", "/run?"+tc.query, tc.tok, tc.body)
		if msg, _ := body["error"].(string); status != tc.status || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: %d %q, want %d and %q", tc.name, status, msg, tc.status, tc.msg)
		}
	}
}
