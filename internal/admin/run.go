package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
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
	// FarEndMs is the far-end file's length; absent without one.
	FarEndMs int `json:"far_end_ms,omitempty"`
	Frames   int `json:"frames"`
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
// 8 kHz, or raw μ-law with ?name=x.ul), or a multipart/form-data body of
// the file (part "audio") and a far-end file (part "far_end") that a stage
// asking for the far-end reference gets frame for frame, as voxhost run
// --far-end feeds it; run through a route's stages by internal/offline,
// the code behind voxhost run.
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
	in, far, herr := h.readUploads(w, r)
	if herr != nil {
		writeError(w, herr.status, "%s", herr.msg)
		return
	}
	if far != nil && !wantsReference(def) {
		writeError(w, http.StatusBadRequest, "far_end %s: no %s stage of pipeline %s (%s) asks for the far-end reference (a plugin that exports vox_reference, such as aec)",
			far.name, direction, route.Name, strings.Join(stageNames(def), " | "))
		return
	}
	dir, err := os.MkdirTemp("", "voxhost-run-")
	if err != nil {
		h.fail(w, err)
		return
	}
	defer os.RemoveAll(dir)
	// Each file keeps the name it was uploaded under, in a directory of
	// its own (the two may share a name), so that errors name it and its
	// extension tells its format, as voxhost run's arguments do; errors
	// name the files as uploaded, not where they were kept.
	sep := string(filepath.Separator)
	clean := func(err error) string {
		return strings.NewReplacer(filepath.Join(dir, "in")+sep, "", filepath.Join(dir, "far")+sep, "", dir+sep, "").Replace(err.Error())
	}
	opts := offline.Options{Definition: def, Out: filepath.Join(dir, "out.wav"), CallID: "admin-run"}
	var farMs int
	for _, u := range []*upload{in, far} {
		if u == nil {
			continue
		}
		path := filepath.Join(dir, u.dir, u.name)
		if err := os.Mkdir(filepath.Dir(path), 0o700); err != nil {
			h.fail(w, err)
			return
		}
		if err := os.WriteFile(path, u.body, 0o600); err != nil {
			h.fail(w, err)
			return
		}
		pcm, rate, err := audiofile.ReadPCM(path)
		if err == nil {
			err = audiofile.RequireRate(path, rate, abi.TelephonyRate)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "%s", clean(err))
			return
		}
		d := time.Duration(len(pcm)/abi.SampleBytes) * time.Second / time.Duration(rate)
		if d > h.opts.MaxRunDuration {
			writeError(w, http.StatusRequestEntityTooLarge, "%s holds %v of audio; POST /run takes at most %v", u.name, d.Round(time.Millisecond), h.opts.MaxRunDuration)
			return
		}
		if u == far {
			opts.FarEnd, farMs = path, int(d/time.Millisecond)
		} else {
			opts.In = path
		}
	}
	var events bytes.Buffer
	opts.Events = &events
	sum, err := offline.Run(r.Context(), opts)
	res := RunResult{Pipeline: route.Name, Direction: direction, Stages: stageNames(def), InputMs: sum.InputMs, FarEndMs: farMs, Frames: sum.Frames,
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
	if res.WAV, err = os.ReadFile(opts.Out); err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// upload is a file of POST /run: the name it was uploaded under (its
// extension tells its format), its bytes, and the directory it is kept in
// for the run.
type upload struct {
	name, dir string
	body      []byte
}

// The parts of a multipart POST /run.
const (
	partAudio  = "audio"
	partFarEnd = "far_end"
)

// maxPartHeaderBytes bounds what a multipart body holds besides its two
// files: boundaries and part headers.
const maxPartHeaderBytes = 64 << 10

// httpError is a request's error: its status and reason.
type httpError struct {
	status int
	msg    string
}

// readUploads reads POST /run's file, and its far-end file when the body
// is multipart; far is nil without one. Each file is bounded by
// MaxRunBytes.
func (h *handler) readUploads(w http.ResponseWriter, r *http.Request) (in, far *upload, herr *httpError) {
	limit := h.opts.MaxRunBytes
	tooBig := func(name string) *httpError {
		return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("%s: the upload is larger than the %d MiB limit of POST /run (%v of 8 kHz audio)",
			name, limit>>20, h.opts.MaxRunDuration)}
	}
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mediaType != "multipart/form-data" {
		name := uploadName(r.URL.Query().Get("name"), "upload.wav")
		if _, err := audiofile.FormatOf(name); err != nil {
			return nil, nil, &httpError{http.StatusBadRequest, err.Error()}
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		var over *http.MaxBytesError
		switch {
		case errors.As(err, &over):
			return nil, nil, tooBig(name)
		case err != nil:
			return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("%s: reading the upload: %v", name, err)}
		case len(body) == 0:
			return nil, nil, &httpError{http.StatusBadRequest, "the request body is empty; send the audio file as the body, e.g. curl -T in.wav, or as the audio part of a multipart/form-data body (curl -F audio=@in.wav -F far_end=@far.wav)"}
		}
		return &upload{name: name, dir: "in", body: body}, nil, nil
	}
	r.Body = http.MaxBytesReader(w, r.Body, 2*limit+maxPartHeaderBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("reading the multipart body: %v", err)}
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		var over *http.MaxBytesError
		if errors.As(err, &over) {
			return nil, nil, tooBig("the multipart body")
		}
		if err != nil {
			return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("reading the multipart body: %v", err)}
		}
		var u **upload
		var dir, fallback string
		switch part.FormName() {
		case partAudio:
			u, dir, fallback = &in, "in", "upload.wav"
		case partFarEnd:
			u, dir, fallback = &far, "far", "far_end.wav"
		default:
			return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("unknown part %q: POST /run takes the parts %q (the audio) and %q (the far-end reference)", part.FormName(), partAudio, partFarEnd)}
		}
		if *u != nil {
			return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("the part %q comes twice", part.FormName())}
		}
		name := uploadName(part.FileName(), fallback)
		if _, err := audiofile.FormatOf(name); err != nil {
			return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("%s: %v", part.FormName(), err)}
		}
		body, err := io.ReadAll(io.LimitReader(part, limit+1))
		switch {
		case errors.As(err, &over) || int64(len(body)) > limit:
			return nil, nil, tooBig(name)
		case err != nil:
			return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("%s: reading the upload: %v", name, err)}
		case len(body) == 0:
			return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("%s: the %q part is empty", name, part.FormName())}
		}
		*u = &upload{name: name, dir: dir, body: body}
	}
	if in == nil {
		return nil, nil, &httpError{http.StatusBadRequest, fmt.Sprintf("the multipart body has no %q part: send the audio file in it (curl -F audio=@in.wav)", partAudio)}
	}
	return in, far, nil
}

// uploadName is the base name of an uploaded file's name, or fallback
// for none: never a path.
func uploadName(name, fallback string) string {
	name = filepath.Base(filepath.Clean("/" + name))
	if name == "/" || name == "." {
		return fallback
	}
	return name
}

// wantsReference says whether a stage of d asks for the far-end
// reference.
func wantsReference(d *pipeline.Definition) bool {
	for _, s := range d.Stages {
		if s.Plugin.WantsReference() {
			return true
		}
	}
	return false
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
