package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/voxhost/voxhost/abi"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/offline"
)

// Defaults of POST /run's bounds. At 8 kHz, the only rate voxhost run
// takes, five minutes of audio are 4.7 MiB of WAV.
const (
	DefaultMaxRunBytes    = 8 << 20
	DefaultMaxRunDuration = 5 * time.Minute
	// maxConcurrentRuns bounds the file runs at once: a run takes a core
	// while it lasts (a fraction of a second for minutes of audio), and
	// the calls must keep theirs.
	maxConcurrentRuns = 1
)

// RunResult is POST /run's answer: what voxhost run would have written and
// printed for the same file and pipeline.
type RunResult struct {
	// Pipeline and Direction say which stages ran: a route's inbound or
	// outbound ones.
	Pipeline  string   `json:"pipeline"`
	Direction string   `json:"direction"`
	Stages    []string `json:"stages"`
	// InputMs is the input's length, Frames the 20 ms frames processed.
	InputMs int `json:"input_ms"`
	Frames  int `json:"frames"`
	// OutputRate is the rate of WAV.
	OutputRate int `json:"output_rate"`
	// Events are the JSON lines voxhost run --events writes, in order.
	Events []json.RawMessage `json:"events"`
	// Faults counts plugin faults, the bypassed ones included.
	Faults int `json:"faults"`
	// Fault is the fault that ended the call early, if one did; WAV then
	// holds the output processed before it.
	Fault string `json:"fault,omitempty"`
	// ElapsedNs is how long the pipeline took over the whole file.
	ElapsedNs int64 `json:"elapsed_ns"`
	// WAV is the processed audio, a PCM16 mono WAV file.
	WAV []byte `json:"wav"`
}

// run serves POST /run: the body is an audio file (.wav, PCM16 mono
// 8 kHz, or raw μ-law with ?name=x.ul), run through a route's stages by
// internal/offline, the code behind voxhost run.
func (h *handler) run(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	direction := q.Get("direction")
	if direction == "" {
		direction = "inbound"
	}
	route, ok := h.m.Route(q.Get("pipeline"))
	if !ok {
		list, _ := h.m.Pipelines()
		names := make([]string, len(list))
		for i, p := range list {
			names[i] = p.Name
		}
		writeError(w, http.StatusNotFound, "unknown pipeline %q (have %s)", q.Get("pipeline"), strings.Join(names, ", "))
		return
	}
	var def *pipeline.Definition
	switch direction {
	case "inbound":
		def = route.Inbound
	case "outbound":
		def = route.Outbound
		if def == nil {
			writeError(w, http.StatusBadRequest, "pipeline %s has no outbound stages: run its inbound ones (direction=inbound)", route.Name)
			return
		}
	default:
		writeError(w, http.StatusBadRequest, "direction %q: want inbound or outbound", direction)
		return
	}
	// The file keeps the name it was uploaded under, so that errors name
	// it and its extension tells its format, as voxhost run's arguments do.
	name := filepath.Base(filepath.Clean("/" + q.Get("name")))
	if name == "/" || name == "." {
		name = "upload.wav"
	}
	if _, err := audiofile.FormatOf(name); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	// The slot is taken before the body is read: bodies waiting for it
	// would each be held whole in memory (eight of 8 MiB took the heap
	// from 5 to 73 MB). A run lasts a fraction of a second, so a client
	// that finds the slot taken is told to retry rather than queued.
	select {
	case h.runs <- struct{}{}:
		defer func() { <-h.runs }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "another file is being run (POST /run takes %d at a time): try again in a moment", maxConcurrentRuns)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxRunBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "%s: the upload is larger than the %d MiB limit of POST /run (%v of 8 kHz audio)",
			name, h.opts.MaxRunBytes>>20, h.opts.MaxRunDuration)
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "%s: reading the upload: %v", name, err)
		return
	case len(body) == 0:
		writeError(w, http.StatusBadRequest, "the request body is empty; send the audio file as the body, e.g. curl -T in.wav")
		return
	}
	dir, err := os.MkdirTemp("", "voxhost-run-")
	if err != nil {
		h.fail(w, err)
		return
	}
	defer os.RemoveAll(dir)
	// Errors name the file as uploaded, not where it was kept.
	clean := func(err error) string { return strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") }
	in, out := filepath.Join(dir, name), filepath.Join(dir, "out.wav")
	if name == "out.wav" {
		out = filepath.Join(dir, "processed.wav")
	}
	if err := os.WriteFile(in, body, 0o600); err != nil {
		h.fail(w, err)
		return
	}
	pcm, rate, err := audiofile.ReadPCM(in)
	if err == nil {
		err = audiofile.RequireRate(in, rate, abi.TelephonyRate)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "%s", clean(err))
		return
	}
	if d := time.Duration(len(pcm)/abi.SampleBytes) * time.Second / time.Duration(rate); d > h.opts.MaxRunDuration {
		writeError(w, http.StatusRequestEntityTooLarge, "%s holds %v of audio; POST /run takes at most %v", name, d.Round(time.Millisecond), h.opts.MaxRunDuration)
		return
	}
	var events bytes.Buffer
	sum, err := offline.Run(r.Context(), offline.Options{Definition: def, In: in, Out: out, Events: &events, CallID: "admin-run"})
	res := RunResult{Pipeline: route.Name, Direction: direction, Stages: stageNames(def), InputMs: sum.InputMs, Frames: sum.Frames,
		OutputRate: sum.OutputRate, Faults: sum.Faults, ElapsedNs: sum.Elapsed.Nanoseconds(), Events: []json.RawMessage{}}
	var fault *offline.FaultError
	switch {
	case errors.As(err, &fault):
		res.Fault = clean(err)
	case err != nil:
		writeError(w, http.StatusBadRequest, "%s", clean(err))
		return
	}
	for _, line := range bytes.Split(events.Bytes(), []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			res.Events = append(res.Events, json.RawMessage(line))
		}
	}
	if res.WAV, err = os.ReadFile(out); err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// stageNames names a definition's stages in order.
func stageNames(d *pipeline.Definition) []string {
	names := make([]string, len(d.Stages))
	for i, s := range d.Stages {
		names[i] = s.Plugin.Name()
	}
	return names
}

// writeError answers an error whose reason is the request's.
func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}
