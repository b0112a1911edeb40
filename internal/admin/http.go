package admin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
)

// DefaultMaxUploadBytes caps one uploaded module: the largest module the
// default plugin limits accept (plugin.DefaultLimits.ModuleBytes), so a
// body no load could accept is refused before it is read whole.
var DefaultMaxUploadBytes = int64(plugin.DefaultLimits.ModuleBytes)

// HandlerOptions configure the admin API.
type HandlerOptions struct {
	// Manager carries out every change.
	Manager *Manager
	// Reload rereads the pipelines from the configuration file and applies
	// them (POST /reload); nil answers that there is no file to reload.
	Reload func(ctx context.Context) (*ReloadReport, error)
	// Tokens are the accepted "Authorization: Bearer" values; with none,
	// every request but the profiles' is accepted (serve it on a loopback
	// address only, behind httpguard's Host and origin checks).
	Tokens []string
	// MaxUploadBytes caps one upload; 0 means DefaultMaxUploadBytes.
	MaxUploadBytes int64
	// MaxRunBytes and MaxRunDuration cap the audio file of one POST /run;
	// 0 means DefaultMaxRunBytes and DefaultMaxRunDuration.
	MaxRunBytes    int64
	MaxRunDuration time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// NewHandler serves the admin API:
//
//	GET    /plugins          every plugin: name, sha256, size, source, loaded_at, used_by
//	GET    /plugins/{name}   one plugin
//	PUT    /plugins/{name}   body: the .wasm; validated, then current for new calls
//	DELETE /plugins/{name}   refused (409) while routes use it, in either direction
//	GET    /pipelines        the routes new calls may ask for: inbound stages ("stages") and
//	                         outbound ones with each stage's sha256, the upstream (url
//	                         template, protocol, codec, rate, header names, on_failure),
//	                         which stages ask for the far-end reference, the recording
//	POST   /reload           reread the config file's routes
//	POST   /run              body: an audio file; run through a route's stages as
//	                         voxhost run would (?pipeline=, ?direction=inbound|outbound,
//	                         ?name= the file's name); the events and the output WAV.
//	                         Or multipart/form-data: parts audio and far_end (the
//	                         far-end reference, as voxhost run --far-end)
//	GET    /calls            the live calls (route, protocol, format, started, frames,
//	                         each plugin's sampled ns/frame) and the ended ones by outcome
//	GET    /calls/{id}       one live call
//	GET    /calls/{id}/recording[/{file}]  the call's recorded files, and one of them (audio/wav)
//	GET    /calls/{id}/tap   the live call's audio as it runs (TapContentType): what the caller
//	                         sent, the far-end reference the inbound stages got, their output
//	GET    /debug/pprof/...  Go profiles of the process (net/http/pprof)
//
// Errors are JSON {"error": "..."}, with "problems" for an invalid module
// and "used_by" for a plugin in use.
func NewHandler(opts HandlerOptions) http.Handler {
	h := newHandler(opts)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /plugins", h.listPlugins)
	mux.HandleFunc("GET /plugins/{name}", h.getPlugin)
	mux.HandleFunc("PUT /plugins/{name}", h.putPlugin)
	mux.HandleFunc("DELETE /plugins/{name}", h.deletePlugin)
	mux.HandleFunc("GET /pipelines", h.listPipelines)
	mux.HandleFunc("POST /reload", h.reload)
	mux.HandleFunc("POST /run", h.run)
	mux.HandleFunc("GET /calls", h.listCalls)
	mux.HandleFunc("GET /calls/{id}", h.getCall)
	h.handleRecordings(mux, "")
	h.handleTap(mux, "")
	// Profiles of the live process, behind the same token: where a busy
	// host spends its CPU is the first question when calls slow down. They
	// show the command line and the heap, where secrets may be, so an API
	// served without tokens does not serve them at all.
	prof := func(f http.HandlerFunc) http.HandlerFunc {
		if len(h.opts.Tokens) > 0 {
			return f
		}
		return func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusForbidden, "the profiles show the process's command line and memory: they are served only with an admin token (admin.tokens)")
		}
	}
	mux.HandleFunc("GET /debug/pprof/", prof(pprof.Index))
	mux.HandleFunc("GET /debug/pprof/cmdline", prof(pprof.Cmdline))
	mux.HandleFunc("GET /debug/pprof/profile", prof(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/symbol", prof(pprof.Symbol))
	mux.HandleFunc("GET /debug/pprof/trace", prof(pprof.Trace))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf(
			"no endpoint %s %s; the admin API has GET /plugins, GET|PUT|DELETE /plugins/{name}, GET /pipelines, POST /reload, POST /run, GET /calls, GET /calls/{id}, GET /calls/{id}/recording, GET /calls/{id}/tap and GET /debug/pprof/", r.Method, r.URL.Path)})
	})
	return RequireBearer(h.opts.Tokens, "voxhost admin", "admin token", "admin.tokens")(mux)
}

// ConsoleCallPrefix begins the ids the browser console gives its calls
// (?call_id=console-…, random after it).
const ConsoleCallPrefix = "console-"

// NewConsoleAPI serves the part of the admin API that the browser console
// needs and a caller may see, behind callers' tokens (opts.Tokens are
// auth.tokens): what the console on the main listener (console: true)
// talks to.
//
//	GET  /pipelines    the routes, with of each upstream only its protocol, codec and rate,
//	                   of each recording not its directory
//	GET  /calls/{id}   one live call the console placed (its id begins ConsoleCallPrefix)
//	GET  /calls/{id}/recording[/{file}]  the recording of a call the console placed
//	GET  /calls/{id}/tap  the audio of a live call the console placed, as it runs
//	POST /run          as the admin API's
//
// It changes nothing, and it shows no bot's URL and lists no calls: the
// console sees its own call by the random id it gave it.
func NewConsoleAPI(opts HandlerOptions) http.Handler {
	h := newHandler(opts)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pipelines", func(w http.ResponseWriter, _ *http.Request) { h.writePipelines(w, true) })
	mux.HandleFunc("POST /run", h.run)
	mux.HandleFunc("GET /calls/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.PathValue("id"), ConsoleCallPrefix) {
			writeError(w, http.StatusNotFound, "the console API shows the console's own calls only, whose ids begin %s", ConsoleCallPrefix)
			return
		}
		h.getCall(w, r)
	})
	h.handleRecordings(mux, ConsoleCallPrefix)
	h.handleTap(mux, ConsoleCallPrefix)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no endpoint %s %s; the console API has GET /pipelines, GET /calls/{id}, GET /calls/{id}/recording, GET /calls/{id}/tap and POST /run", r.Method, r.URL.Path)
	})
	return RequireBearer(opts.Tokens, "voxhost", "token", "auth.tokens")(mux)
}

// newHandler fills in opts' defaults.
func newHandler(opts HandlerOptions) *handler {
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if opts.MaxRunBytes <= 0 {
		opts.MaxRunBytes = DefaultMaxRunBytes
	}
	if opts.MaxRunDuration <= 0 {
		opts.MaxRunDuration = DefaultMaxRunDuration
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &handler{opts: opts, m: opts.Manager, runs: make(chan struct{}, maxConcurrentRuns)}
}

type handler struct {
	opts HandlerOptions
	m    *Manager
	// runs holds a token per POST /run in progress.
	runs chan struct{}
}

// RequireBearer lets through requests whose "Authorization: Bearer" value
// is one of tokens (compared in constant time), and answers the others 401
// with a JSON error that calls the token noun ("admin token") and names
// the config key it comes from ("admin.tokens"), and a WWW-Authenticate
// challenge of realm. With no tokens every request passes: serve it on a
// loopback address only.
func RequireBearer(tokens []string, realm, noun, key string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(tokens) > 0 {
				token := ""
				if scheme, rest, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
					token = strings.TrimSpace(rest)
				}
				ok := false
				for _, t := range tokens {
					if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
						ok = true
					}
				}
				if !ok {
					w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer realm=%q", realm))
					what := "missing"
					if token != "" {
						what = "wrong"
					}
					writeError(w, http.StatusUnauthorized, "%s %s: send Authorization: Bearer TOKEN with one of %s", what, noun, key)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

func (h *handler) listPlugins(w http.ResponseWriter, _ *http.Request) {
	list, rej := h.m.Plugins()
	writeJSON(w, http.StatusOK, struct {
		Plugins  []PluginInfo `json:"plugins"`
		Rejected []Rejection  `json:"rejected"`
	}{list, rej})
}

func (h *handler) getPlugin(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	info, ok := h.m.Plugin(name)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no plugin %s is loaded and none is built in", name)})
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (h *handler) putPlugin(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := checkName(name); err != nil {
		h.fail(w, err)
		return
	}
	wasm, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxUploadBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf(
			"plugin %s: the upload is larger than the %d MiB limit", name, h.opts.MaxUploadBytes>>20)})
		return
	case err != nil:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("plugin %s: reading the upload: %v", name, err)})
		return
	case len(wasm) == 0:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf(
			"plugin %s: the request body is empty; send the .wasm file as the body, e.g. curl -T %s.wasm", name, name)})
		return
	}
	res, err := h.m.Upload(r.Context(), name, wasm)
	if err != nil {
		h.fail(w, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, res)
}

func (h *handler) deletePlugin(w http.ResponseWriter, r *http.Request) {
	info, err := h.m.Delete(r.Context(), r.PathValue("name"))
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Deleted PluginInfo `json:"deleted"`
	}{info})
}

func (h *handler) listPipelines(w http.ResponseWriter, _ *http.Request) { h.writePipelines(w, false) }

// writePipelines answers the routes; redacted, an upstream shows only its
// protocol, codec and rate.
func (h *handler) writePipelines(w http.ResponseWriter, redacted bool) {
	list, def := h.m.Pipelines()
	costs := h.stageCosts()
	for i, p := range list {
		if u := p.Upstream; u != nil && redacted {
			list[i].Upstream = &UpstreamInfo{Protocol: u.Protocol, Codec: u.Codec, Rate: u.Rate, Headers: []string{}}
		}
		if r := p.Recording; r != nil && redacted {
			// Where the host keeps the callers' voices is the operator's.
			list[i].Recording = &RouteRecordingInfo{What: r.What, MaxSeconds: r.MaxSeconds, MinFreeBytes: r.MinFreeBytes}
		}
		for j, st := range p.Stages {
			list[i].Stages[j].Cost = costs[[3]string{p.Name, server.DirectionInbound, st.name}]
		}
		for j, st := range p.Outbound {
			list[i].Outbound[j].Cost = costs[[3]string{p.Name, server.DirectionOutbound, st.name}]
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Default   string         `json:"default"`
		Pipelines []PipelineInfo `json:"pipelines"`
	}{def, list})
}

func (h *handler) reload(w http.ResponseWriter, r *http.Request) {
	if h.opts.Reload == nil {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "voxhost was started without a config file (--config), so there are no pipelines to reload"})
		return
	}
	rep, err := h.opts.Reload(r.Context())
	if err != nil {
		// A file that does not parse, a pipeline that does not build:
		// the request is what needs fixing, and the old set stays.
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error() + " (the running pipelines are unchanged)"})
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// fail answers an error from the manager.
func (h *handler) fail(w http.ResponseWriter, err error) {
	var (
		re  *RejectedError
		iu  *InUseError
		nf  *NotFoundError
		bad *BadRequestError
	)
	switch {
	case errors.As(err, &re):
		body := map[string]any{"error": re.Reason + " (the previous version stays)"}
		if len(re.Problems) > 0 {
			body["problems"] = re.Problems
		}
		writeJSON(w, http.StatusBadRequest, body)
	case errors.As(err, &iu):
		writeJSON(w, http.StatusConflict, map[string]any{"error": iu.Error(), "used_by": iu.Pipelines})
	case errors.As(err, &nf):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": nf.Error()})
	case errors.As(err, &bad):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": bad.Error()})
	default:
		h.opts.Logger.Error("admin request failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
