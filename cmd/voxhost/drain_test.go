package main

// Tests of the deployment files under deploy/ against the real CLI and a real
// server, and of the drain a rollout relies on, end to end on the real binary.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/goccy/go-yaml"
	"github.com/urfave/cli/v2"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/internal/app"
	"github.com/voxhost/voxhost/internal/signal"
)

const (
	repoRoot  = "../.."
	deployDir = repoRoot + "/deploy"
	k8sDir    = deployDir + "/kubernetes"
	// httpShutdown is how long Serve gives the HTTP server after a drain
	// (host/server.Serve), on top of the drain timeout.
	httpShutdown = 5 * time.Second
)

// --- Kubernetes objects, only the fields the checks read -------------------

type objectMeta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type Header struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds int `yaml:"periodSeconds"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name string `yaml:"name"`
	} `yaml:"env"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
			Exec    any `yaml:"exec"`
			HTTPGet any `yaml:"httpGet"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	SecurityContext struct {
		ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type volume struct {
	Name      string `yaml:"name"`
	ConfigMap *struct {
		Name  string `yaml:"name"`
		Items []struct {
			Key  string `yaml:"key"`
			Path string `yaml:"path"`
		} `yaml:"items"`
	} `yaml:"configMap"`
	EmptyDir any `yaml:"emptyDir"`
}

type deployment struct {
	Header `yaml:",inline"`
	Spec   struct {
		Replicas *int          `yaml:"replicas"`
		Selector labelSelector `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				TerminationGracePeriodSeconds *int        `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
				Volumes                       []volume    `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type service struct {
	Header `yaml:",inline"`
	Spec   struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type serviceMonitor struct {
	Header `yaml:",inline"`
	Spec   struct {
		Selector  labelSelector `yaml:"selector"`
		Endpoints []struct {
			Port              string `yaml:"port"`
			Path              string `yaml:"path"`
			MetricRelabelings []struct {
				SourceLabels []string `yaml:"sourceLabels"`
				Action       string   `yaml:"action"`
				Regex        string   `yaml:"regex"`
			} `yaml:"metricRelabelings"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type hpa struct {
	Header `yaml:",inline"`
	Spec   struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		Metrics []struct {
			Type string `yaml:"type"`
			Pods *struct {
				Metric struct {
					Name string `yaml:"name"`
				} `yaml:"metric"`
				Target struct {
					Type         string `yaml:"type"`
					AverageValue any    `yaml:"averageValue"`
				} `yaml:"target"`
			} `yaml:"pods"`
		} `yaml:"metrics"`
	} `yaml:"spec"`
}

type pdb struct {
	Header `yaml:",inline"`
	Spec   struct {
		Selector labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type configMap struct {
	Header `yaml:",inline"`
	Data   map[string]string `yaml:"data"`
}

type kustomization struct {
	Header    `yaml:",inline"`
	Resources []string `yaml:"resources"`
	Images    []struct {
		Name string `yaml:"name"`
	} `yaml:"images"`
}

// adapterValues is the Prometheus Adapter rule file (Helm values shape).
type adapterValues struct {
	Rules struct {
		Custom []struct {
			SeriesQuery string `yaml:"seriesQuery"`
			Name        struct {
				Matches string `yaml:"matches"`
				As      string `yaml:"as"`
			} `yaml:"name"`
			MetricsQuery string `yaml:"metricsQuery"`
		} `yaml:"custom"`
	} `yaml:"rules"`
}

// yamlDoc is one document of a file under deploy/kubernetes.
type yamlDoc struct {
	file string
	raw  []byte
	head Header
}

func (d yamlDoc) decode(t *testing.T, v any) {
	t.Helper()
	if err := yaml.Unmarshal(d.raw, v); err != nil {
		t.Fatalf("%s (%s %s): %v", d.file, d.head.Kind, d.head.Metadata.Name, err)
	}
}

// readYAMLDocs splits every .yaml file in dir into its documents.
func readYAMLDocs(t *testing.T, dir string) []yamlDoc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no YAML under %s (%v)", dir, err)
	}
	var docs []yamlDoc
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if v == nil {
				continue
			}
			raw, err := yaml.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			d := yamlDoc{file: filepath.Base(f), raw: raw}
			d.decode(t, &d.head)
			docs = append(docs, d)
		}
	}
	return docs
}

// one returns the only object of kind, decoded into v.
func one[T any](t *testing.T, docs []yamlDoc, kind string) (T, yamlDoc) {
	t.Helper()
	var found []yamlDoc
	for _, d := range docs {
		if d.head.Kind == kind {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s under deploy/kubernetes, found %d", kind, len(found))
	}
	var v T
	found[0].decode(t, &v)
	return v, found[0]
}

// --- the CLI -----------------------------------------------------------------

// cliArgs is what a command line sets: global flags, the subcommand, its flags.
type cliArgs struct {
	global  map[string]string
	command string
	flags   map[string]string
}

// walkArgs checks args (without the program name) against newApp(): global
// flags before the subcommand, the subcommand's flags after it, a value after
// every flag that takes one, values that parse as the flag's type.
func walkArgs(args []string) (cliArgs, error) {
	a := newApp()
	out := cliArgs{global: map[string]string{}, flags: map[string]string{}}
	flags, where := a.Flags, "global"
	var cmd *cli.Command
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			if cmd != nil {
				return out, fmt.Errorf("unexpected argument %q after %s's flags", arg, cmd.Name)
			}
			for _, c := range a.Commands {
				if c.HasName(arg) {
					cmd = c
				}
			}
			if cmd == nil {
				return out, fmt.Errorf("%q is not a voxhost command", arg)
			}
			out.command, flags, where = cmd.Name, cmd.Flags, cmd.Name
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f := findFlag(flags, name)
		if f == nil {
			other := "serve"
			if cmd != nil {
				other = "global"
			}
			hint := ""
			if findFlag(a.Flags, name) != nil || findFlag(serveCommand().Flags, name) != nil {
				hint = fmt.Sprintf(" (it is a %s flag: mind its place relative to the subcommand)", other)
			}
			return out, fmt.Errorf("--%s is not a %s flag%s", name, where, hint)
		}
		takes := true
		if dg, ok := f.(cli.DocGenerationFlag); ok {
			takes = dg.TakesValue()
		}
		if takes && !hasValue {
			if i+1 >= len(args) {
				return out, fmt.Errorf("--%s needs a value", name)
			}
			i++
			value = args[i]
		}
		if err := checkFlagValue(f, value); err != nil {
			return out, fmt.Errorf("--%s %q: %v", name, value, err)
		}
		key := f.Names()[0]
		if cmd == nil {
			out.global[key] = value
		} else {
			out.flags[key] = value
		}
	}
	if cmd == nil {
		return out, errors.New("no subcommand")
	}
	return out, nil
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func checkFlagValue(f cli.Flag, v string) error {
	var err error
	switch f.(type) {
	case *cli.DurationFlag:
		_, err = time.ParseDuration(v)
	case *cli.UintFlag:
		_, err = strconv.ParseUint(v, 0, 64)
	case *cli.IntFlag:
		_, err = strconv.ParseInt(v, 0, 64)
	case *cli.Float64Flag:
		_, err = strconv.ParseFloat(v, 64)
	}
	return err
}

// parsedServe runs args through urfave/cli itself, with serve's action
// replaced by one that records what serve would have read; it confirms
// walkArgs's model of the command line.
type parsedServe struct {
	config, cacheDir, pluginsDir string
	cacheDirSet                  bool
	drainTimeout                 time.Duration
	drainSet                     bool
}

func parseServe(t *testing.T, args []string) parsedServe {
	t.Helper()
	a := newApp()
	a.Writer, a.ErrWriter = io.Discard, io.Discard
	a.Before = nil // it would replace slog's default logger
	var got parsedServe
	ran := false
	for _, c := range a.Commands {
		if c.Name == "serve" {
			c.Action = func(c *cli.Context) error {
				ran = true
				got = parsedServe{
					config: c.String("config"), cacheDir: c.String("cache-dir"), cacheDirSet: c.IsSet("cache-dir"),
					pluginsDir: c.String("plugins-dir"), drainTimeout: c.Duration("drain-timeout"), drainSet: c.IsSet("drain-timeout"),
				}
				return nil
			}
		}
	}
	if err := a.Run(append([]string{"voxhost"}, args...)); err != nil || !ran {
		t.Fatalf("voxhost %s: the CLI does not run serve: %v", strings.Join(args, " "), err)
	}
	return got
}

// --- metrics -------------------------------------------------------------------

// promNames finds metric names in PromQL (and label_values()) expressions.
var promNames = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:$])((?:voxhost|go|process)_[a-zA-Z0-9_]+)`)

func metricNamesIn(expr string) []string {
	var names []string
	for _, m := range promNames.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	return names
}

// scrapeNames returns the series names of a /metrics response.
func scrapeNames(body string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end > 0 {
			names[line[:end]] = true
		}
	}
	return names
}

// dashboardExprs collects every query of a Grafana dashboard: panel targets
// and template variables.
func dashboardExprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "definition" || k == "query") {
				*out = append(*out, s)
				continue
			}
			dashboardExprs(x, out)
		}
	case []any:
		for _, x := range v {
			dashboardExprs(x, out)
		}
	}
}

// --- a real server on the ConfigMap's config ---------------------------------

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type liveHost struct {
	base  string // http://127.0.0.1:PORT
	token string
}

func (h liveHost) get(t *testing.T, p string) (int, string) {
	t.Helper()
	resp, err := http.Get(h.base + p)
	if err != nil {
		t.Fatalf("GET %s: %v", p, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (h liveHost) dial(ctx context.Context, query string) (*websocket.Conn, *http.Response, error) {
	hdr := http.Header{}
	if h.token != "" {
		hdr.Set("Authorization", "Bearer "+h.token)
	}
	return websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.base, "http")+"/ws"+query, &websocket.DialOptions{HTTPHeader: hdr})
}

// startHost serves cfg (the ConfigMap's, plus a pipeline with faulty test
// plugins so that every metric family has series) through internal/app, as
// `voxhost serve --addr 127.0.0.1:0` would.
func startHost(t *testing.T, cfg config.Config) liveHost {
	t.Helper()
	h := liveHost{}
	if cfg.Auth.TokensEnv != "" {
		h.token = "manifest-test-token"
		t.Setenv(cfg.Auth.TokensEnv, h.token)
	}
	fixture := func(name string) string { return filepath.Join(repoRoot, "host", "plugin", "testdata", name+".wasm") }
	cfg.Pipelines = maps.Clone(cfg.Pipelines)
	if cfg.Pipelines == nil {
		cfg.Pipelines = map[string]config.Route{}
	}
	cfg.Pipelines["faulty"] = config.Route{Inbound: []config.Stage{{Plugin: fixture("events")}, {Plugin: fixture("trap")}}}
	if err := app.Apply(&cfg, app.Overrides{Addr: "127.0.0.1:0", CacheDir: "-", PluginsDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	host, err := app.New(ctx, cfg, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- host.ListenAndServe(ctx, func(a net.Addr) { addrc <- a }) }()
	select {
	case a := <-addrc:
		h.base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		<-done
		host.Close(context.Background())
	})
	return h
}

// exercise makes the server produce a series in every metric family: a call
// on the default pipeline, one whose plugins emit events and trap, a
// malformed call and refused connections.
func (h liveHost) exercise(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	frame := make([]byte, 160)
	codec.EncodeUlaw(frame, signal.Speech(8000, 1)[:320])
	c, _, err := h.dial(ctx, "")
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	for i := 0; i < 5; i++ {
		if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
			t.Fatal(err)
		}
		for {
			typ, _, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("call, frame %d: %v", i, err)
			}
			if typ == websocket.MessageBinary {
				break
			}
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	// events.wasm emits an event at call start and answers every other
	// frame; trap.wasm traps at its third.
	c, _, err = h.dial(ctx, "?pipeline=faulty")
	if err != nil {
		t.Fatalf("faulty call: %v", err)
	}
	for i := 0; i < 8; i++ {
		if err := c.Write(ctx, websocket.MessageBinary, frame); err != nil {
			t.Fatal(err)
		}
	}
	for {
		typ, msg, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("faulty call: no plugin_error event: %v", err)
		}
		if typ == websocket.MessageText && strings.Contains(string(msg), "plugin_error") {
			break
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	c, _, err = h.dial(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Write(ctx, websocket.MessageBinary, frame[:7]) // not whole milliseconds
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusInvalidFramePayloadData {
		t.Fatalf("malformed frame: %v", err)
	}
	if _, resp, err := h.dial(ctx, "?pipeline=no-such-pipeline"); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown pipeline: %v", err)
	}
}

// scrapeUntil polls /metrics until no call is active and every name in want
// is there, or a few seconds pass; it returns the last scrape's names.
func (h liveHost) scrapeUntil(t *testing.T, want []string) map[string]bool {
	t.Helper()
	var names map[string]bool
	for deadline := time.Now().Add(5 * time.Second); ; {
		code, body := h.get(t, "/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics: HTTP %d", code)
		}
		names = scrapeNames(body)
		idle := strings.Contains(body, "\nvoxhost_active_calls 0\n")
		missing := slices.ContainsFunc(want, func(n string) bool { return !names[n] })
		if idle && !missing || time.Now().After(deadline) {
			return names
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --- TestManifests -----------------------------------------------------------------

// TestManifests checks deploy/ against the code it deploys: the container's
// command line against the CLI, probes and ports against a live server built
// from the ConfigMap's config, every metric name the HPA, the adapter rule,
// the ServiceMonitor and the Grafana dashboard use against that server's
// /metrics, the shutdown budget against the drain timeout, and the Dockerfile
// and systemd unit against the repository and the CLI.
func TestManifests(t *testing.T) {
	docs := readYAMLDocs(t, k8sDir)

	// The ConfigMap's voxhost.yaml is a valid config.
	cm, cmDoc := one[configMap](t, docs, "ConfigMap")
	cfgText, ok := cm.Data["voxhost.yaml"]
	if !ok {
		t.Fatalf("%s: ConfigMap %s has no voxhost.yaml key", cmDoc.file, cm.Metadata.Name)
	}
	cfg, err := config.ParseChecked(cmDoc.file+":voxhost.yaml", []byte(cfgText), app.Checker{})
	if err != nil {
		t.Fatal(err)
	}
	highWater := cfg.Limits.ReadyHighWater
	if highWater == 0 {
		highWater = cfg.Limits.MaxCalls
	}

	// The Deployment's container runs a command line the CLI accepts.
	dep, depDoc := one[deployment](t, docs, "Deployment")
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: want one container, have %d", depDoc.file, len(pod.Containers))
	}
	ctr := pod.Containers[0]
	if len(ctr.Command) != 0 {
		t.Errorf("%s: command overrides the image's ENTRYPOINT /voxhost; pass args only", depDoc.file)
	}
	args, err := walkArgs(ctr.Args)
	if err != nil {
		t.Fatalf("%s: container args %q: %v", depDoc.file, ctr.Args, err)
	}
	if args.command != "serve" {
		t.Fatalf("%s: the container runs %q, not serve", depDoc.file, args.command)
	}
	parsed := parseServe(t, ctr.Args)
	if parsed.config != args.flags["config"] || !parsed.cacheDirSet && args.global["cache-dir"] != "" {
		t.Fatalf("urfave/cli reads %+v from %q, the walk %+v", parsed, ctr.Args, args)
	}
	if parsed.config == "" {
		t.Fatalf("%s: serve has no --config, so the ConfigMap is not read", depDoc.file)
	}
	mounts := map[string]string{} // mount path → volume name
	readOnly := map[string]bool{}
	for _, m := range ctr.VolumeMounts {
		mounts[m.MountPath], readOnly[m.MountPath] = m.Name, m.ReadOnly
	}
	volumes := map[string]volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	// --config names the ConfigMap's key where the volume mounts it.
	cfgVol := volumes[mounts[path.Dir(parsed.config)]]
	if cfgVol.ConfigMap == nil || cfgVol.ConfigMap.Name != cm.Metadata.Name {
		t.Fatalf("%s: --config %s is not in a volume of ConfigMap %s", depDoc.file, parsed.config, cm.Metadata.Name)
	}
	keyFile := "voxhost.yaml"
	for _, it := range cfgVol.ConfigMap.Items {
		if it.Key == "voxhost.yaml" {
			keyFile = it.Path
		}
	}
	if path.Base(parsed.config) != keyFile {
		t.Fatalf("%s: --config %s, but the ConfigMap's voxhost.yaml is mounted as %s", depDoc.file, parsed.config, keyFile)
	}
	// The cache is a writable emptyDir; plugins_dir is mounted; the flags
	// and the config agree on both.
	cacheDir, pluginsDir := parsed.cacheDir, parsed.pluginsDir
	if !parsed.cacheDirSet {
		cacheDir = cfg.CacheDir
	}
	if pluginsDir == "" {
		pluginsDir = cfg.PluginsDir
	}
	if v, ok := volumes[mounts[cacheDir]]; !ok || v.EmptyDir == nil || readOnly[cacheDir] {
		t.Errorf("%s: the compile cache %q is not a writable emptyDir mount (the root file system is read-only: %v)",
			depDoc.file, cacheDir, ctr.SecurityContext.ReadOnlyRootFilesystem)
	}
	if _, ok := mounts[pluginsDir]; pluginsDir != "" && !ok {
		t.Errorf("%s: plugins dir %q is not mounted", depDoc.file, pluginsDir)
	}
	for key, pair := range map[string][2]string{"cache_dir": {cfg.CacheDir, cacheDir}, "plugins_dir": {cfg.PluginsDir, pluginsDir}} {
		if pair[0] != "" && pair[0] != pair[1] {
			t.Errorf("%s: %s is %q but the container's flag says %q", cmDoc.file, key, pair[0], pair[1])
		}
	}
	if cfg.Auth.TokensEnv != "" && !slices.ContainsFunc(ctr.Env, func(e struct {
		Name string `yaml:"name"`
	}) bool {
		return e.Name == cfg.Auth.TokensEnv
	}) {
		t.Errorf("%s: auth.tokens_env is %s but the container does not set it, so serve refuses to start", depDoc.file, cfg.Auth.TokensEnv)
	}

	// Ports: the container port is the one the config listens on; the
	// Service and the probes reach it.
	listen := cfg.Listen
	if a := args.flags["addr"]; a != "" {
		listen = a
	}
	_, port, _ := net.SplitHostPort(listen)
	namedPorts := map[string]int{}
	for _, p := range ctr.Ports {
		namedPorts[p.Name] = p.ContainerPort
	}
	if strconv.Itoa(namedPorts["http"]) != port {
		t.Fatalf("%s: containerPort %d (http), but the server listens on %s", depDoc.file, namedPorts["http"], listen)
	}
	resolvePort := func(p any) string {
		if s, ok := p.(string); ok {
			if n, ok := namedPorts[s]; ok {
				return strconv.Itoa(n)
			}
			return "unknown port " + s
		}
		return fmt.Sprint(p)
	}
	svc, svcDoc := one[service](t, docs, "Service")
	podLabels := dep.Spec.Template.Metadata.Labels
	selects := func(sel, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !selects(dep.Spec.Selector.MatchLabels, podLabels) || !selects(svc.Spec.Selector, podLabels) {
		t.Errorf("the Deployment's or the Service's selector does not match the pod labels %v", podLabels)
	}
	svcPorts := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Name] = true
		if got := resolvePort(p.TargetPort); got != port {
			t.Errorf("%s: port %s targets %s, the server listens on %s", svcDoc.file, p.Name, got, port)
		}
	}
	if dep.Spec.Replicas != nil {
		t.Errorf("%s: replicas is set, so every apply resets what the HPA chose", depDoc.file)
	}
	pdbObj, pdbDoc := one[pdb](t, docs, "PodDisruptionBudget")
	if !selects(pdbObj.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("%s: selector does not match the pods", pdbDoc.file)
	}

	// Shutdown budget: preStop, the whole drain and the HTTP shutdown fit in
	// the grace period, or the kubelet SIGKILLs calls mid-drain.
	drain := cfg.Limits.DrainTimeout
	if parsed.drainSet {
		drain = parsed.drainTimeout
	}
	preStop := time.Duration(0)
	if ps := ctr.Lifecycle.PreStop; ps != nil {
		if ps.Exec != nil {
			t.Errorf("%s: preStop exec needs a shell or sleep binary; the image is distroless", depDoc.file)
		}
		if ps.Sleep != nil {
			preStop = time.Duration(ps.Sleep.Seconds) * time.Second
		}
	}
	if preStop == 0 {
		t.Errorf("%s: no preStop sleep: SIGTERM would race endpoint removal", depDoc.file)
	}
	grace := 30 * time.Second // the Kubernetes default
	if g := pod.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if grace < preStop+drain+httpShutdown {
		t.Errorf("%s: terminationGracePeriodSeconds %v < preStop %v + drain_timeout %v + HTTP shutdown %v",
			depDoc.file, grace, preStop, drain, httpShutdown)
	}

	// The HPA scales this Deployment on calls below the high-water mark, and
	// the adapter serves its metric.
	hp, hpaDoc := one[hpa](t, docs, "HorizontalPodAutoscaler")
	if hp.Spec.ScaleTargetRef.Kind != "Deployment" || hp.Spec.ScaleTargetRef.Name != dep.Metadata.Name {
		t.Errorf("%s: scales %s/%s, not the Deployment %s", hpaDoc.file, hp.Spec.ScaleTargetRef.Kind, hp.Spec.ScaleTargetRef.Name, dep.Metadata.Name)
	}
	var adapter adapterValues
	var adapterFile string
	for _, d := range docs {
		if d.head.Kind == "" {
			if adapterFile != "" {
				t.Fatalf("two files without a kind: %s, %s", adapterFile, d.file)
			}
			adapterFile = d.file
			d.decode(t, &adapter)
		}
	}
	if len(adapter.Rules.Custom) == 0 {
		t.Fatalf("no Prometheus Adapter rules (rules.custom) under deploy/kubernetes")
	}
	adapterAs := map[string]bool{}
	var used []string // metric names the server must expose
	for _, r := range adapter.Rules.Custom {
		series := metricNamesIn(r.SeriesQuery)
		if len(series) != 1 {
			t.Fatalf("%s: seriesQuery %q names %v", adapterFile, r.SeriesQuery, series)
		}
		re, err := regexp.Compile(r.Name.Matches)
		if err != nil || !re.MatchString(series[0]) {
			t.Fatalf("%s: name.matches %q does not match %s (%v)", adapterFile, r.Name.Matches, series[0], err)
		}
		as := r.Name.As
		if as == "" {
			as = series[0]
		}
		adapterAs[as] = true
		used = append(used, series...)
		if !strings.Contains(r.MetricsQuery, "<<.Series>>") || !strings.Contains(r.MetricsQuery, "<<.GroupBy>>") {
			t.Errorf("%s: metricsQuery %q must use <<.Series>> and group by <<.GroupBy>>", adapterFile, r.MetricsQuery)
		}
	}
	podMetrics := 0
	for _, m := range hp.Spec.Metrics {
		if m.Type != "Pods" || m.Pods == nil {
			continue
		}
		podMetrics++
		name := m.Pods.Metric.Name
		if !adapterAs[name] {
			t.Errorf("%s: metric %s is not served by the adapter rules in %s", hpaDoc.file, name, adapterFile)
		}
		used = append(used, name)
		target, err := strconv.ParseFloat(strings.TrimSuffix(fmt.Sprint(m.Pods.Target.AverageValue), "m"), 64)
		if strings.HasSuffix(fmt.Sprint(m.Pods.Target.AverageValue), "m") {
			target /= 1000
		}
		if err != nil || m.Pods.Target.Type != "AverageValue" {
			t.Errorf("%s: %s target %v %v", hpaDoc.file, name, m.Pods.Target.Type, m.Pods.Target.AverageValue)
		}
		if name == "voxhost_active_calls" && (target <= 0 || target >= float64(highWater)) {
			t.Errorf("%s: target of %v calls per pod must be below ready_high_water (%d), or pods stop taking calls before the HPA adds any",
				hpaDoc.file, target, highWater)
		}
	}
	if podMetrics == 0 {
		t.Errorf("%s: no Pods metric", hpaDoc.file)
	}

	// The ServiceMonitor scrapes the Service's port; its keep filter lets
	// through every name used anywhere.
	sm, smDoc := one[serviceMonitor](t, docs, "ServiceMonitor")
	if !selects(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels) || len(sm.Spec.Endpoints) == 0 {
		t.Fatalf("%s: does not select the Service (labels %v)", smDoc.file, svc.Metadata.Labels)
	}
	var keeps []*regexp.Regexp
	var listed []string // plain names in keep regexes
	for _, ep := range sm.Spec.Endpoints {
		if !svcPorts[ep.Port] {
			t.Errorf("%s: port %q is not a Service port", smDoc.file, ep.Port)
		}
		for _, r := range ep.MetricRelabelings {
			if r.Action != "keep" || !slices.Equal(r.SourceLabels, []string{"__name__"}) {
				continue
			}
			keeps = append(keeps, regexp.MustCompile("^(?:"+r.Regex+")$"))
			for _, alt := range strings.Split(r.Regex, "|") {
				if regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`).MatchString(alt) {
					listed = append(listed, alt)
				}
			}
		}
	}

	// The Grafana dashboard's queries.
	var dash any
	data, err := os.ReadFile(filepath.Join(deployDir, "grafana", "voxhost-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("voxhost-dashboard.json: %v", err)
	}
	var exprs []string
	dashboardExprs(dash, &exprs)
	dashNames := 0
	for _, e := range exprs {
		n := metricNamesIn(e)
		dashNames += len(n)
		used = append(used, n...)
	}
	if dashNames < 15 {
		t.Fatalf("the dashboard's queries name only %d metrics", dashNames)
	}
	slices.Sort(used)
	used = slices.Compact(used)

	// A live server on the ConfigMap's config: probes, metrics path, names.
	h := startHost(t, cfg)
	for _, p := range []*probe{ctr.LivenessProbe, ctr.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Fatalf("%s: container lacks an httpGet liveness or readiness probe", depDoc.file)
		}
		if got := resolvePort(p.HTTPGet.Port); got != port {
			t.Errorf("%s: probe %s on port %s, the server listens on %s", depDoc.file, p.HTTPGet.Path, got, port)
		}
		if code, body := h.get(t, p.HTTPGet.Path); code != http.StatusOK {
			t.Errorf("%s: probe path %s answers HTTP %d %q", depDoc.file, p.HTTPGet.Path, code, body)
		}
	}
	if ctr.LivenessProbe.HTTPGet.Path != "/healthz" || ctr.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("%s: liveness must be /healthz (200 while draining) and readiness /readyz (503 while draining or full), have %s and %s",
			depDoc.file, ctr.LivenessProbe.HTTPGet.Path, ctr.ReadinessProbe.HTTPGet.Path)
	}
	if p := ctr.ReadinessProbe.PeriodSeconds; p < 1 || p > 5 {
		t.Errorf("%s: readiness periodSeconds %d: a full or draining pod should leave the Service within seconds", depDoc.file, p)
	}
	for _, ep := range sm.Spec.Endpoints {
		if code, _ := h.get(t, ep.Path); code != http.StatusOK {
			t.Errorf("%s: path %s answers HTTP %d", smDoc.file, ep.Path, code)
		}
	}
	h.exercise(t)
	names := h.scrapeUntil(t, slices.Concat(used, listed))
	for _, n := range used {
		if !names[n] {
			t.Errorf("metric %s (used by the dashboard, the HPA or the adapter) is not in /metrics", n)
		}
		for _, k := range keeps {
			if !k.MatchString(n) {
				t.Errorf("%s: metric %s is used but dropped by the keep regex", smDoc.file, n)
			}
		}
	}
	for _, n := range listed {
		if !names[n] {
			t.Errorf("%s: keep regex lists %s, which /metrics does not have", smDoc.file, n)
		}
	}
	for n := range names {
		if strings.HasPrefix(n, "voxhost_") {
			for _, k := range keeps {
				if !k.MatchString(n) {
					t.Errorf("%s: drops %s", smDoc.file, n)
				}
			}
		}
	}

	// kustomization.yaml lists every object file, and only those.
	kz, kzDoc := one[kustomization](t, docs, "Kustomization")
	var objectFiles []string
	for _, d := range docs {
		if d.head.Kind != "" && d.head.Kind != "Kustomization" && !slices.Contains(objectFiles, d.file) {
			objectFiles = append(objectFiles, d.file)
		}
	}
	slices.Sort(objectFiles)
	res := slices.Clone(kz.Resources)
	slices.Sort(res)
	if !slices.Equal(res, objectFiles) {
		t.Errorf("%s: resources %v, object files %v", kzDoc.file, res, objectFiles)
	}
	if len(kz.Images) == 0 || kz.Images[0].Name != ctr.Image {
		t.Errorf("%s: images does not retag the container image %q", kzDoc.file, ctr.Image)
	}

	t.Run("Dockerfile", func(t *testing.T) { checkDockerfile(t) })
	t.Run("systemd", func(t *testing.T) { checkSystemdUnit(t) })
}

// dockerInstr is one Dockerfile instruction with its continuation lines joined.
type dockerInstr struct{ op, args string }

func readDockerfile(t *testing.T, file string) []dockerInstr {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []dockerInstr
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if s, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(trimmed)
		op, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, dockerInstr{strings.ToUpper(op), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

func jsonArray(t *testing.T, s string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("Dockerfile: %q is not the exec (JSON array) form: %v", s, err)
	}
	return v
}

// dockerignored reports whether a .dockerignore pattern list excludes rel
// (or a directory above it). It knows the forms deploy/ uses: plain paths,
// globs, a leading **/ and ! exceptions.
func dockerignored(patterns []string, rel string) bool {
	parts := strings.Split(rel, "/")
	ignored := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		match := false
		for i := 1; i <= len(parts) && !match; i++ {
			prefix := strings.Join(parts[:i], "/")
			if sub, ok := strings.CutPrefix(p, "**/"); ok {
				for j := 0; j < i && !match; j++ {
					match, _ = path.Match(sub, strings.Join(parts[j:i], "/"))
				}
			} else {
				match, _ = path.Match(p, prefix)
			}
		}
		if match {
			ignored = !neg
		}
	}
	return ignored
}

func checkDockerfile(t *testing.T) {
	instrs := readDockerfile(t, filepath.Join(deployDir, "Dockerfile"))
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	goVersion := string(m[1])

	var ignore []string
	if data, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile.dockerignore")); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				ignore = append(ignore, l)
			}
		}
	}
	for _, need := range []string{"go.mod", "go.sum", "cmd/voxhost/main.go", "host/server/server.go", "plugins/plugins.go", "plugins/gain/gain.wasm", "plugins/dtmf/dtmf.wasm"} {
		if dockerignored(ignore, need) {
			t.Errorf("Dockerfile.dockerignore excludes %s, which the build needs", need)
		}
	}
	for _, junk := range []string{".git/HEAD", "plugins/agc/node_modules/x", "plugins/dtmf/target/x", "transport.test"} {
		if !dockerignored(ignore, junk) {
			t.Errorf("Dockerfile.dockerignore lets %s into the build context", junk)
		}
	}

	var (
		stages      []string // FROM images
		builtOut    string   // go build -o
		copiedTo    = map[string]string{}
		env         = map[string]string{}
		entrypoint  []string
		cmd         []string
		exposed     []string
		user        string
		buildStage  string
		finalFromGo bool
	)
	for _, in := range instrs {
		switch in.op {
		case "FROM":
			f := strings.Fields(in.args)
			img := ""
			for i := 0; i < len(f); i++ {
				if strings.HasPrefix(f[i], "--") {
					continue
				}
				img = f[i]
				if i+2 < len(f) && strings.EqualFold(f[i+1], "AS") {
					buildStage = f[i+2]
				}
				break
			}
			stages = append(stages, img)
			if tag, ok := strings.CutPrefix(img, "golang:"); ok {
				if mm := regexp.MustCompile(`^\d+\.\d+`).FindString(tag); mm != goVersion {
					t.Errorf("Dockerfile: builder %s, go.mod says go %s", img, goVersion)
				}
			}
			finalFromGo = strings.HasPrefix(img, "golang:")
		case "RUN":
			if i := strings.Index(in.args, "go build"); i >= 0 {
				fields := strings.Fields(in.args[i:])
				for j, f := range fields {
					if f == "-o" && j+1 < len(fields) {
						builtOut = fields[j+1]
					}
				}
				pkg := fields[len(fields)-1]
				if !strings.HasPrefix(pkg, "./") {
					t.Fatalf("Dockerfile: go build's last argument %q is not a package path", pkg)
				}
				if fi, err := os.Stat(filepath.Join(repoRoot, pkg)); err != nil || !fi.IsDir() {
					t.Errorf("Dockerfile: builds %s, which is not a directory of the repository", pkg)
				} else if _, err := os.Stat(filepath.Join(repoRoot, pkg, "main.go")); err != nil {
					t.Errorf("Dockerfile: %s has no main.go", pkg)
				}
				if !strings.Contains(in.args, "CGO_ENABLED=0") {
					t.Errorf("Dockerfile: go build without CGO_ENABLED=0 cannot run on distroless/static")
				}
			}
		case "COPY":
			f := strings.Fields(in.args)
			from := ""
			var paths []string
			for _, x := range f {
				if v, ok := strings.CutPrefix(x, "--from="); ok {
					from = v
				} else if !strings.HasPrefix(x, "--") {
					paths = append(paths, x)
				}
			}
			dst := paths[len(paths)-1]
			for _, src := range paths[:len(paths)-1] {
				copiedTo[dst] = from + ":" + src
				if from == "" && src != "." {
					if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
						t.Errorf("Dockerfile: COPY %s: not in the repository", src)
					}
					if dockerignored(ignore, src) {
						t.Errorf("Dockerfile: COPY %s, which Dockerfile.dockerignore excludes", src)
					}
				}
			}
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					env[k] = v
				}
			}
		case "ENTRYPOINT":
			entrypoint = jsonArray(t, in.args)
		case "CMD":
			cmd = jsonArray(t, in.args)
		case "EXPOSE":
			exposed = strings.Fields(in.args)
		case "USER":
			user = in.args
		}
	}
	if len(stages) < 2 || finalFromGo || !strings.HasPrefix(stages[len(stages)-1], "gcr.io/distroless/static") {
		t.Errorf("Dockerfile: stages %v: want a golang builder and a distroless/static final image", stages)
	}
	if user == "" || strings.HasPrefix(user, "root") || strings.HasPrefix(user, "0") {
		t.Errorf("Dockerfile: USER %q: the image must not run as root", user)
	}
	if len(entrypoint) != 1 || copiedTo[entrypoint[0]] != buildStage+":"+builtOut {
		t.Errorf("Dockerfile: ENTRYPOINT %v is not the binary go build writes (%s in stage %s): copies %v", entrypoint, builtOut, buildStage, copiedTo)
	}
	// The global flags' environment variables the image sets exist.
	envFlags := map[string]string{}
	for _, f := range newApp().Flags {
		if e, ok := f.(interface{ GetEnvVars() []string }); ok {
			for _, v := range e.GetEnvVars() {
				envFlags[v] = f.Names()[0]
			}
		}
	}
	for _, f := range serveCommand().Flags {
		if e, ok := f.(interface{ GetEnvVars() []string }); ok {
			for _, v := range e.GetEnvVars() {
				envFlags[v] = f.Names()[0]
			}
		}
	}
	for k := range env {
		if strings.HasPrefix(k, "VOXHOST_") && envFlags[k] == "" {
			t.Errorf("Dockerfile: ENV %s is read by no flag", k)
		}
	}
	// CMD is a serve command line the CLI accepts, with the image's
	// environment, and its config is the one the image carries.
	if _, err := walkArgs(cmd); err != nil {
		t.Fatalf("Dockerfile: CMD %v: %v", cmd, err)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	p := parseServe(t, cmd)
	for k, v := range env {
		got := map[string]string{"cache-dir": p.cacheDir, "plugins-dir": p.pluginsDir}[envFlags[k]]
		if envFlags[k] != "" && got != v {
			t.Errorf("Dockerfile: ENV %s=%s, but serve reads --%s %q", k, v, envFlags[k], got)
		}
	}
	src, ok := copiedTo[p.config]
	if !ok || strings.Index(src, ":") != 0 {
		t.Fatalf("Dockerfile: CMD's --config %s is not copied from the repository (copies: %v)", p.config, copiedTo)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, src[1:]))
	if err != nil {
		t.Fatal(err)
	}
	imgCfg, err := config.ParseChecked(src[1:], data, app.Checker{})
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(imgCfg.Listen)
	if !slices.Contains(exposed, port) && !slices.Contains(exposed, port+"/tcp") {
		t.Errorf("Dockerfile: EXPOSE %v, the image's config listens on %s", exposed, imgCfg.Listen)
	}
}

// checkSystemdUnit checks the unit's ExecStart against the CLI and its stop
// timeout against the drain.
func checkSystemdUnit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(deployDir, "systemd", "voxhost.service"))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok {
			keys[k] = append(keys[k], v)
		}
	}
	execStart := strings.Fields(keys["ExecStart"][0])
	if len(execStart) < 2 || filepath.Base(execStart[0]) != "voxhost" {
		t.Fatalf("ExecStart %q does not run voxhost", execStart)
	}
	args, err := walkArgs(execStart[1:])
	if err != nil || args.command != "serve" {
		t.Fatalf("ExecStart %q: %v", execStart, err)
	}
	p := parseServe(t, execStart[1:])
	if !p.drainSet {
		t.Fatalf("ExecStart sets no --drain-timeout to compare TimeoutStopSec with")
	}
	stopSec := strings.TrimSpace(keys["TimeoutStopSec"][0])
	if _, err := strconv.Atoi(stopSec); err == nil {
		stopSec += "s" // systemd reads a bare number as seconds
	}
	stop, err := time.ParseDuration(stopSec)
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	if stop < p.drainTimeout+httpShutdown {
		t.Errorf("TimeoutStopSec %v < --drain-timeout %v + HTTP shutdown %v: systemd would SIGKILL a drain", stop, p.drainTimeout, httpShutdown)
	}
	for k, want := range map[string]string{"KillSignal": "SIGTERM", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
		"CacheDirectory": "voxhost", "Restart": "on-failure", "MemoryDenyWriteExecute": "no"} {
		if got := keys[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%v, want %s", k, got, want)
		}
	}
	if !strings.HasPrefix(p.cacheDir, "%C/voxhost") {
		t.Errorf("--cache-dir %s is not the unit's CacheDirectory (%%C/voxhost), the one writable path under ProtectSystem=strict", p.cacheDir)
	}
}

// --- TestDrainEndToEnd ---------------------------------------------------------------

// drainCall is one streaming raw call of TestDrainEndToEnd.
type drainCall struct {
	conn   *websocket.Conn
	stop   chan struct{} // closed: send {"event":"stop"} and stop streaming
	done   chan struct{} // closed when the reader has seen the end
	mu     sync.Mutex
	frames int // binary replies
	status websocket.StatusCode
	reason string
	ended  time.Time
}

func (c *drainCall) replies() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.frames
}

func startDrainCall(t *testing.T, url string) *drainCall {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c := &drainCall{conn: conn, stop: make(chan struct{}), done: make(chan struct{})}
	go func() { // reader: counts replies, records the close
		defer close(c.done)
		for {
			typ, _, err := conn.Read(context.Background())
			if err != nil {
				c.mu.Lock()
				c.status, c.ended = websocket.CloseStatus(err), time.Now()
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					c.reason = ce.Reason
				}
				c.mu.Unlock()
				return
			}
			if typ == websocket.MessageBinary {
				c.mu.Lock()
				c.frames++
				c.mu.Unlock()
			}
		}
	}()
	go func() { // writer: a frame every 20 ms, as a phone line does
		frame := make([]byte, 160)
		codec.EncodeUlaw(frame, signal.Speech(8000, 1)[:320])
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				_ = conn.Write(context.Background(), websocket.MessageText, []byte(`{"event":"stop"}`))
				return
			case <-c.done:
				return
			case <-tick.C:
				if conn.Write(context.Background(), websocket.MessageBinary, frame) != nil {
					return
				}
			}
		}
	}()
	return c
}

// TestDrainEndToEnd runs the real binary, as a rollout stops a pod: five
// calls stream, SIGTERM arrives, two calls end on their own during the drain
// and three are cut at the deadline.
func TestDrainEndToEnd(t *testing.T) {
	bin := buildVoxhost(t)
	const drain = 2 * time.Second
	p := startServe(t, exec.Command(bin, "--cache-dir", "-", "serve", "--addr", "127.0.0.1:0", "--drain-timeout", drain.String()))
	proc, addr, exited := p.proc, p.addr, p.exited
	base := "http://" + addr
	readyz := func() (int, string) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz before the drain: %d %q", code, body)
	}

	calls := make([]*drainCall, 5)
	for i := range calls {
		calls[i] = startDrainCall(t, fmt.Sprintf("ws://%s/ws?call_id=drain-%d", addr, i))
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		streaming := 0
		for _, c := range calls {
			if c.replies() >= 5 {
				streaming++
			}
		}
		if streaming == len(calls) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d calls are streaming", streaming, len(calls))
		}
	}

	if err := proc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sigterm := time.Now()
	for {
		code, body := readyz()
		if code == http.StatusServiceUnavailable && body == "draining" {
			break
		}
		if time.Since(sigterm) > time.Second {
			t.Fatalf("/readyz is %d %q a second after SIGTERM, want 503 draining", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	atDrain := make([]int, len(calls))
	for i, c := range calls {
		atDrain[i] = c.replies()
	}

	// New calls are refused while the drain runs.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	extra, resp, err := websocket.Dial(ctx, "ws://"+addr+"/ws?call_id=late", nil)
	cancel()
	switch {
	case err == nil:
		extra.CloseNow()
		t.Fatal("a new call was accepted during the drain")
	case resp != nil && resp.StatusCode != http.StatusServiceUnavailable:
		t.Fatalf("a new call during the drain got HTTP %d, want 503", resp.StatusCode)
	case resp == nil && !errors.Is(err, syscall.ECONNREFUSED):
		t.Fatalf("a new call during the drain failed with %v, want 503 or connection refused", err)
	}

	// Two calls end on their own: the client says stop, the server flushes
	// and closes normally, well before the deadline.
	finishing, cut := calls[:2], calls[2:]
	for _, c := range finishing {
		close(c.stop)
	}
	for i, c := range finishing {
		select {
		case <-c.done:
		case <-time.After(drain / 2):
			t.Fatalf("finishing call %d did not end within %v of its stop", i, drain/2)
		}
		if c.status != websocket.StatusNormalClosure || c.reason != "stream stopped" {
			t.Errorf("finishing call %d closed with %d %q, want 1000 \"stream stopped\"", i, c.status, c.reason)
		}
	}

	// The others keep being served until the deadline, then are cut with
	// 1001.
	for i, c := range cut {
		select {
		case <-c.done:
		case <-time.After(drain + 3*time.Second):
			t.Fatalf("call %d still open %v after SIGTERM", i+2, time.Since(sigterm))
		}
		if c.status != websocket.StatusGoingAway || c.reason != "server shutting down" {
			t.Errorf("call %d closed with %d %q, want 1001 \"server shutting down\"", i+2, c.status, c.reason)
		}
		if at := c.ended.Sub(sigterm); at < drain-200*time.Millisecond {
			t.Errorf("call %d was cut %v after SIGTERM, before the %v drain timeout", i+2, at, drain)
		}
		// ~100 frames are due in 2 s; the call was answered through the drain.
		if got := c.replies() - atDrain[i+2]; got < 40 {
			t.Errorf("call %d got %d replies during the drain, want it served until cut", i+2, got)
		}
	}

	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("voxhost exited with %v, want 0\n%s", err, p.logs())
		}
	case <-time.After(drain + 5*time.Second):
		t.Fatalf("voxhost still running %v after SIGTERM\n%s", time.Since(sigterm), p.logs())
	}
	if took := time.Since(sigterm); took > drain+3*time.Second {
		t.Errorf("exit took %v after SIGTERM, drain timeout %v", took, drain)
	}
	out := p.logs()
	if !regexp.MustCompile(`msg=drained finished=2 cut=3\b`).MatchString(out) {
		t.Errorf("log lacks `drained finished=2 cut=3`:\n%s", out)
	}
	if strings.Contains(out, "call=late") {
		t.Errorf("the call refused during the drain was served:\n%s", out)
	}
}
