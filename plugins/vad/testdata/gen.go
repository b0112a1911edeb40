//go:build ignore

// gen renders the VAD test fixture: two English phrases spoken by espeak-ng,
// converted by sox to 8 kHz mono PCM16, laid out between known stretches of
// digital silence. It writes speech_8k.wav and boundaries.json beside itself.
// The tests need neither tool; run it only to re-render the fixture:
//
//	apt-get install -y espeak-ng sox
//	cd plugins/vad/testdata && go run gen.go
//
// A phrase's true boundaries are its first and last sample whose magnitude
// reaches Threshold (100, -50 dBFS): each rendered phrase is trimmed to that
// span before it is placed, so the start is the first sample of the phrase
// and the end the sample after its last one.
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/voxhost/voxhost/internal/audiofile"
)

const (
	rate      = 8000
	threshold = 100
)

var phrases = []string{
	"Welcome to voice host how may I help you",
	"I would like to check my order",
}

// Silences before the first phrase, between phrases, after the last, in ms.
var gaps = []int{1000, 800, 1200}

type boundary struct {
	Text        string  `json:"text"`
	StartSample int     `json:"start_sample"`
	EndSample   int     `json:"end_sample"`
	StartMs     float64 `json:"start_ms"`
	EndMs       float64 `json:"end_ms"`
}

type table struct {
	Rate      int        `json:"rate"`
	Threshold int        `json:"threshold"`
	Samples   int        `json:"samples"`
	Phrases   []boundary `json:"phrases"`
}

func main() {
	tmp, err := os.MkdirTemp("", "vadfixture")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	out := silence(gaps[0])
	t := table{Rate: rate, Threshold: threshold}
	for i, text := range phrases {
		raw := filepath.Join(tmp, fmt.Sprintf("p%d.wav", i))
		conv := filepath.Join(tmp, fmt.Sprintf("p%d_8k.wav", i))
		run("espeak-ng", "-v", "en", "-s", "150", "-w", raw, text)
		// -D: no dither, so silence stays digital silence; -4 dB of headroom
		// keeps the resampler from clipping.
		run("sox", raw, "-D", "-r", "8000", "-c", "1", "-b", "16", "-e", "signed-integer", conv, "gain", "-4")
		pcm, r, err := audiofile.ReadPCM(conv)
		if err != nil || r != rate {
			log.Fatalf("%s: rate %d, %v", conv, r, err)
		}
		first, last := -1, -1
		for j := 0; j < len(pcm)/2; j++ {
			if v := int16(binary.LittleEndian.Uint16(pcm[2*j:])); v >= threshold || v <= -threshold {
				if first < 0 {
					first = j
				}
				last = j
			}
		}
		start := len(out) / 2
		out = append(out, pcm[2*first:2*(last+1)]...)
		end := len(out) / 2
		t.Phrases = append(t.Phrases, boundary{
			Text: text, StartSample: start, EndSample: end,
			StartMs: float64(start) * 1000 / rate, EndMs: float64(end) * 1000 / rate,
		})
		out = append(out, silence(gaps[i+1])...)
	}
	t.Samples = len(out) / 2
	if err := audiofile.WritePCM("speech_8k.wav", out, rate); err != nil {
		log.Fatal(err)
	}
	js, _ := json.MarshalIndent(t, "", "  ")
	if err := os.WriteFile("boundaries.json", append(js, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("speech_8k.wav: %d samples (%.2f s)\n%s\n", t.Samples, float64(t.Samples)/rate, js)
}

func silence(ms int) []byte { return make([]byte, 2*ms*rate/1000) }

func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("%s: %v", name, err)
	}
}
