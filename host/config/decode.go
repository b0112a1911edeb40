package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The file is decoded by walking goccy/go-yaml's syntax tree rather than
// with yaml.Unmarshal: the tree keeps every value's position, and Unmarshal
// is lenient where a config must not be (it turns the token 0x1f into
// "31" and max_calls: 1.5 into 1, and reports a bad duration with no
// position at all).

// fieldError is a problem with the value at a key path such as
// "limits.max_calls" or "pipelines.main[0].on_error". Pos is nil when the
// error comes from Validate, which has no file; Parse then looks the path
// up among the positions the decoder recorded.
type fieldError struct {
	path string
	pos  *token.Position
	msg  string
}

func (e *fieldError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// invalid reports a bad value found after decoding.
func invalid(path, format string, args ...any) error {
	return &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
}

// decoder remembers what the walk has seen: anchors, because the parser
// leaves aliases unresolved, and the position of every key path, for the
// errors Validate reports later.
type decoder struct {
	anchors map[string]ast.Node
	seen    map[string]*token.Position
}

func newDecoder() *decoder {
	return &decoder{anchors: map[string]ast.Node{}, seen: map[string]*token.Position{}}
}

// A field decodes the value of one key into its place in a Config. N is
// never an anchor or an alias. A plain error is about n as a whole; the
// caller adds the path and position.
type field func(d *decoder, n ast.Node, path string) error

func configFields(c *Config) map[string]field {
	return map[string]field{
		"listen":             str(&c.Listen),
		"plugins_dir":        str(&c.PluginsDir),
		"cache_dir":          str(&c.CacheDir),
		"memory_limit_pages": integer(&c.MemoryLimitPages),
		"log_level":          str(&c.LogLevel),
		"limits": mapping(map[string]field{
			"max_calls":              integer(&c.Limits.MaxCalls),
			"max_message_bytes":      integer(&c.Limits.MaxMessageBytes),
			"idle_timeout":           duration(&c.Limits.IdleTimeout),
			"drain_timeout":          duration(&c.Limits.DrainTimeout),
			"max_frame_ms":           integer(&c.Limits.MaxFrameMs),
			"ready_high_water":       integer(&c.Limits.ReadyHighWater),
			"ready_low_water":        integer(&c.Limits.ReadyLowWater),
			"cpu_high_water_percent": integer(&c.Limits.CPUHighWaterPercent),
			"cpu_low_water_percent":  integer(&c.Limits.CPULowWaterPercent),
			"cpu_wait_high_water":    duration(&c.Limits.CPUWaitHighWater),
			"cpu_wait_low_water":     duration(&c.Limits.CPUWaitLowWater),
			"max_concurrent_setups":  integer(&c.Limits.MaxConcurrentSetups),
			"setup_wait":             duration(&c.Limits.SetupWait),
			"stall_timeout":          duration(&c.Limits.StallTimeout),
			"call_cpu_share":         fraction(&c.Limits.CallCPUShare),
			"frame_deadline":         duration(&c.Limits.FrameDeadline),
			"plugin_slots":           integer(&c.Limits.PluginSlots),
			"call_host_cost":         fraction(&c.Limits.CallHostCost),
		}),
		"playout": mapping(map[string]field{
			"queue":      duration(&c.Playout.Queue),
			"send_ahead": duration(&c.Playout.SendAhead),
		}),
		"plugin_limits": mapping(map[string]field{
			"module_bytes":         atLeastOne(&c.PluginLimits.Module.ModuleBytes),
			"functions":            atLeastOne(&c.PluginLimits.Module.Functions),
			"function_locals":      atLeastOne(&c.PluginLimits.Module.FunctionLocals),
			"module_locals":        atLeastOne(&c.PluginLimits.Module.ModuleLocals),
			"function_bytes":       atLeastOne(&c.PluginLimits.Module.FunctionBytes),
			"code_bytes":           atLeastOne(&c.PluginLimits.Module.CodeBytes),
			"nesting":              atLeastOne(&c.PluginLimits.Module.Nesting),
			"tables":               atLeastOne(&c.PluginLimits.Module.Tables),
			"table_elements":       atLeastOne(&c.PluginLimits.Module.TableElements),
			"globals":              atLeastOne(&c.PluginLimits.Module.Globals),
			"data_segments":        atLeastOne(&c.PluginLimits.Module.DataSegments),
			"data_bytes":           atLeastOne(&c.PluginLimits.Module.DataBytes),
			"element_entries":      atLeastOne(&c.PluginLimits.Module.ElementEntries),
			"branch_table_entries": atLeastOne(&c.PluginLimits.Module.BranchTableEntries),
			"rewrite_factor":       atLeastOne(&c.PluginLimits.Module.RewriteFactor),
			"compile_timeout":      duration(&c.PluginLimits.CompileTimeout),
			"init_budget":          duration(&c.PluginLimits.InitBudget),
		}),
		"auth": mapping(map[string]field{
			"tokens":     strs(&c.Auth.Tokens),
			"tokens_env": str(&c.Auth.TokensEnv),
		}),
		"admin": mapping(map[string]field{
			"listen":            str(&c.Admin.Listen),
			"tokens":            strs(&c.Admin.Tokens),
			"tokens_env":        str(&c.Admin.TokensEnv),
			"allowed_hosts":     strs(&c.Admin.AllowedHosts),
			"insecure_no_token": boolean(&c.Admin.InsecureNoToken),
		}),
		"http": mapping(map[string]field{
			"read_header_timeout": duration(&c.HTTP.ReadHeaderTimeout),
			"read_timeout":        duration(&c.HTTP.ReadTimeout),
			"idle_timeout":        duration(&c.HTTP.IdleTimeout),
			"max_header_bytes":    integer(&c.HTTP.MaxHeaderBytes),
			"max_conns_per_ip":    integer(&c.HTTP.MaxConnsPerIP),
		}),
		"allowed_hosts": strs(&c.AllowedHosts),
		"audiosocket": mapping(map[string]field{
			"listen":   str(&c.AudioSocket.Listen),
			"pipeline": str(&c.AudioSocket.Pipeline),
		}),
		"sip":              mapping(sipFields(&c.SIP)),
		"origins":          strs(&c.Origins),
		"console":          boolean(&c.Console),
		"default_pipeline": str(&c.DefaultPipeline),
		"pipelines":        mapOf(&c.Pipelines, route),
	}
}

func stageFields(st *Stage) map[string]field {
	return map[string]field{
		"plugin":    str(&st.Plugin),
		"config":    object(&st.Config),
		"on_error":  str(&st.OnError),
		"budget_ms": positive(integer(&st.BudgetMs), &st.BudgetMs),
	}
}

// decode parses data and sets the fields of c that it names.
func (d *decoder) decode(data []byte, c *Config) error {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return fromYAML("", err)
	}
	var body ast.Node
	for _, doc := range file.Docs {
		switch {
		case doc.Body == nil:
		case body != nil:
			return &fieldError{pos: position(doc.Body), msg: "a second YAML document; the config is one document"}
		default:
			body = doc.Body
		}
	}
	if body == nil {
		return nil
	}
	d.seen[""] = position(body)
	return d.value(body, "", mapping(configFields(c)))
}

// value resolves n and decodes it with f, giving errors a position.
func (d *decoder) value(n ast.Node, path string, f field) error {
	v, err := d.resolve(n)
	if err == nil {
		err = f(d, v, path)
	}
	var fe *fieldError
	if err == nil || errors.As(err, &fe) {
		return err
	}
	return &fieldError{path: path, pos: position(n), msg: err.Error()}
}

// resolve looks through anchors and aliases. An anchor is recorded after
// its value is resolved, so "&a *a" is an unknown alias, not a loop; an
// anchor inside its own value ("&a [*a]") cannot loop either, because each
// field decodes one level of a fixed, finite schema.
func (d *decoder) resolve(n ast.Node) (ast.Node, error) {
	switch v := n.(type) {
	case *ast.AnchorNode:
		target, err := d.resolve(v.Value)
		if err != nil {
			return nil, err
		}
		d.anchors[v.Name.GetToken().Value] = target
		return target, nil
	case *ast.AliasNode:
		name := v.Value.GetToken().Value
		target, ok := d.anchors[name]
		if !ok {
			return nil, fmt.Errorf("alias *%s has no anchor &%s before it", shown(name), shown(name))
		}
		return target, nil
	case *ast.TagNode:
		// Honouring !!str and friends would mean a second set of
		// conversion rules; quoting already says "this is a string".
		return nil, fmt.Errorf("YAML tags such as %s are not supported; quote the value instead", shown(v.GetToken().Value))
	}
	return n, nil
}

// entries calls fn for each key of a mapping, in file order.
func (d *decoder) entries(n ast.Node, path string, fn func(key *ast.StringNode, v ast.Node, path string) error) error {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		return want("a mapping", n)
	}
	for _, kv := range m.Values {
		key, ok := kv.Key.(*ast.StringNode)
		if !ok {
			msg := want("a string key", kv.Key).Error()
			if kv.Key.IsMergeKey() {
				msg = "merge keys (<<) are not supported; use an alias (*name) for the whole value"
			}
			return &fieldError{path: path, pos: position(kv.Key), msg: msg}
		}
		at := join(path, key.Value)
		pos := position(kv.Value)
		if kv.Value.Type() == ast.NullType {
			// An empty value's position is wherever the parser stopped,
			// past the end of the line; the key is what to point at.
			pos = position(key)
		}
		d.seen[at] = pos
		if err := fn(key, kv.Value, at); err != nil {
			return err
		}
	}
	return nil
}

// elements calls f for each element of a sequence, in file order.
func (d *decoder) elements(n ast.Node, path string, f field) error {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return want("a list", n)
	}
	for i, e := range seq.Values {
		at := fmt.Sprintf("%s[%d]", path, i)
		d.seen[at] = position(e)
		if err := d.value(e, at, f); err != nil {
			return err
		}
	}
	return nil
}

// mapping decodes a mapping with a fixed set of keys. A key with no value
// (or ~) keeps its default rather than zeroing it.
func mapping(fields map[string]field) field {
	return func(d *decoder, n ast.Node, path string) error {
		return d.entries(n, path, func(key *ast.StringNode, v ast.Node, at string) error {
			f, ok := fields[key.Value]
			if !ok {
				return &fieldError{path: path, pos: position(key), msg: fmt.Sprintf("unknown key %q (want one of: %s)",
					key.Value, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))}
			}
			if v.Type() == ast.NullType {
				return nil
			}
			return d.value(v, at, f)
		})
	}
}

// mapOf decodes a mapping whose keys the file chooses (pipeline, header
// and option names), each value with the field elem makes for it.
func mapOf[T any](dst *map[string]T, elem func(*T) field) field {
	return func(d *decoder, n ast.Node, path string) error {
		out := map[string]T{}
		*dst = out
		return d.entries(n, path, func(key *ast.StringNode, v ast.Node, at string) error {
			var x T
			if err := d.value(v, at, elem(&x)); err != nil {
				return err
			}
			out[key.Value] = x
			return nil
		})
	}
}

// route decodes a route: a mapping of its parts, or the list of stages
// that every route was before routes had parts, which is still an echo
// through those stages.
func route(r *Route) field {
	return func(d *decoder, n ast.Node, path string) error {
		switch n.(type) {
		case *ast.MappingNode:
			return mapping(map[string]field{
				"inbound":    stageList(&r.Inbound),
				"outbound":   stageList(&r.Outbound),
				"upstream":   upstream(&r.Upstream),
				"over_quota": str(&r.OverQuota),
				"recording":  recording(&r.Recording),
			})(d, n, path)
		case *ast.SequenceNode, *ast.NullNode:
			r.listed = true
			return stageList(&r.Inbound)(d, n, path)
		}
		return want("a list of stages, or a mapping of inbound, outbound and upstream", n)
	}
}

func upstream(dst **Upstream) field {
	return func(d *decoder, n ast.Node, path string) error {
		u := &Upstream{}
		*dst = u
		return mapping(map[string]field{
			"url":             str(&u.URL),
			"protocol":        str(&u.Protocol),
			"codec":           str(&u.Codec),
			"rate":            integer(&u.Rate),
			"headers":         mapOf(&u.Headers, secret),
			"options":         mapOf(&u.Options, str),
			"connect_timeout": positive(duration(&u.ConnectTimeout), &u.ConnectTimeout),
			"on_failure":      str(&u.OnFailure),
		})(d, n, path)
	}
}

// positive decodes a value with f, then refuses one that is not
// positive. Zero is refused here, where it can be told from a key left
// out: it would read as "none" (no time at all, no budget) but mean the
// default.
func positive[T int | time.Duration](f field, dst *T) field {
	return func(d *decoder, n ast.Node, path string) error {
		if err := f(d, n, path); err != nil {
			return err
		}
		if *dst <= 0 {
			return fmt.Errorf("must be positive, got %v", *dst)
		}
		return nil
	}
}

// atLeastOne decodes a module limit, which the file cannot set to 0:
// that would read as "no module may have any" (a plugin needs a function
// and code) but mean the runtime's default.
func atLeastOne[T int | uint32 | uint64](dst *T) field {
	return func(d *decoder, n ast.Node, path string) error {
		if err := integer(dst)(d, n, path); err != nil {
			return err
		}
		if *dst == 0 {
			return errors.New("must be at least 1")
		}
		return nil
	}
}

// secret decodes a header value, reading its ${VAR}s from the
// environment. The value never reaches an error message: a wrong type is
// named by its kind alone.
func secret(dst *Secret) field {
	return func(d *decoder, n ast.Node, path string) error {
		var tmpl string
		if err := str(&tmpl)(d, n, path); err != nil {
			return fmt.Errorf("want a string, got %s (the value is not shown); quote it", n.Type().YAMLName())
		}
		value, err := expandEnv(tmpl)
		if err != nil {
			return err
		}
		*dst = NewSecret(value)
		return nil
	}
}

func stageList(dst *[]Stage) field {
	return func(d *decoder, n ast.Node, path string) error {
		if n.Type() == ast.NullType {
			// "main:" with nothing under it is an empty pipeline, which
			// Validate reports in its own words.
			return nil
		}
		return d.elements(n, path, func(d *decoder, n ast.Node, path string) error {
			if _, ok := n.(*ast.MappingNode); !ok {
				return want("a stage such as {plugin: gain}", n)
			}
			var st Stage
			if err := mapping(stageFields(&st))(d, n, path); err != nil {
				return err
			}
			*dst = append(*dst, st)
			return nil
		})
	}
}

func str(dst *string) field {
	return func(_ *decoder, n ast.Node, _ string) error {
		if lit, ok := n.(*ast.LiteralNode); ok && lit.Value != nil {
			// A block scalar (| or >) is a string too.
			n = lit.Value
		}
		s, ok := n.(*ast.StringNode)
		if !ok {
			if t, ok := text(n); ok {
				return fmt.Errorf("%w; quote it to mean the text %q", want("a string", n), t)
			}
			return want("a string", n)
		}
		*dst = s.Value
		return nil
	}
}

func strs(dst *[]string) field {
	return func(d *decoder, n ast.Node, path string) error {
		var out []string
		err := d.elements(n, path, func(d *decoder, n ast.Node, path string) error {
			var s string
			if err := str(&s)(d, n, path); err != nil {
				return err
			}
			out = append(out, s)
			return nil
		})
		*dst = out
		return err
	}
}

func integer[T int | uint32 | uint64](dst *T) field {
	return func(_ *decoder, n ast.Node, _ string) error {
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			return want("an integer", n)
		}
		// The parser stores non-negative integers as uint64 and negative
		// ones as int64.
		i, ok := in.Value.(int64)
		if u, isUint := in.Value.(uint64); isUint {
			i, ok = int64(u), u <= math.MaxInt64
		}
		// A negative value converts back to itself through uint64.
		if !ok || int64(T(i)) != i || i < 0 && T(i) > 0 {
			return fmt.Errorf("%s is out of range", in.GetToken().Value)
		}
		*dst = T(i)
		return nil
	}
}

// fraction decodes a number from 0 to 1 (an integer 0 or 1 too).
func fraction(dst *float64) field {
	return func(_ *decoder, n ast.Node, _ string) error {
		var v float64
		switch x := n.(type) {
		case *ast.FloatNode:
			v = x.Value
		case *ast.IntegerNode:
			i, ok := x.Value.(uint64)
			if !ok || i > 1 {
				return want("a fraction from 0 to 1, such as 0.5", n)
			}
			v = float64(i)
		default:
			return want("a fraction from 0 to 1, such as 0.5", n)
		}
		if v < 0 || v > 1 || math.IsNaN(v) {
			return fmt.Errorf("%v is not between 0 and 1", v)
		}
		*dst = v
		return nil
	}
}

func boolean(dst *bool) field {
	return func(_ *decoder, n ast.Node, _ string) error {
		b, ok := n.(*ast.BoolNode)
		if !ok {
			return want("true or false", n)
		}
		*dst = b.Value
		return nil
	}
}

func duration(dst *time.Duration) field {
	return func(_ *decoder, n ast.Node, _ string) error {
		s, ok := n.(*ast.StringNode)
		if !ok {
			return want(`a duration such as "10s" or "1m30s"`, n)
		}
		v, err := time.ParseDuration(s.Value)
		if err != nil {
			return err
		}
		*dst = v
		return nil
	}
}

// object decodes a plugin's config, whose shape only the plugin knows.
func object(dst *map[string]any) field {
	return func(_ *decoder, n ast.Node, path string) error {
		if _, ok := n.(*ast.MappingNode); !ok {
			return want("a mapping", n)
		}
		var m map[string]any
		if err := yaml.NodeToValue(n, &m); err != nil {
			return fromYAML(path, err)
		}
		*dst = m
		return nil
	}
}

// want reports a value of the wrong kind.
func want(what string, n ast.Node) error {
	if t, ok := text(n); ok {
		return fmt.Errorf("want %s, got %s %s", what, n.Type().YAMLName(), t)
	}
	return fmt.Errorf("want %s, got %s", what, n.Type().YAMLName())
}

// text is a scalar as the file spells it, for messages; a string is quoted
// because it may span lines.
func text(n ast.Node) (string, bool) {
	if _, ok := n.(ast.ScalarNode); !ok || n.Type() == ast.NullType {
		return "", false
	}
	if n.Type() == ast.StringType {
		return strconv.Quote(n.GetToken().Value), true
	}
	return n.GetToken().Value, true
}

// fromYAML keeps the position and message of a goccy/go-yaml error but
// not the source excerpt its Error method appends over several lines.
func fromYAML(path string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		return &fieldError{path: path, pos: ye.GetToken().Position, msg: ye.GetMessage()}
	}
	return err
}

// locate turns err into "name:line:col: message". Errors from Validate
// carry only a key path; a key the file does not set (a stage's missing
// plugin) takes the position of the nearest enclosing key that it does.
func (d *decoder) locate(name string, err error) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", name, err)
	}
	pos := fe.pos
	for p := fe.path; pos == nil; p = parent(p) {
		pos = d.seen[p]
		if p == "" {
			break
		}
	}
	if pos == nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return fmt.Errorf("%s:%d:%d: %w", name, pos.Line, pos.Column, err)
}

// position is where a person would look for n. A block mapping's own
// token is its first colon, so it is placed at its first key instead.
func position(n ast.Node) *token.Position {
	if m, ok := n.(*ast.MappingNode); ok && len(m.Values) > 0 {
		n = m.Values[0].Key
	}
	return n.GetToken().Position
}

// shown spells a name from the file (an alias, a tag) for a message: as it
// is, or quoted when it is empty or holds a space, a line break or another
// unprintable character. The parser lets such names through, and one with a
// line break would split the one-line error.
func shown(name string) string {
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return strconv.Quote(name)
	}
	return name
}

// join adds a key to a path, quoting a key (a pipeline name) that would
// make the path ambiguous or span lines.
func join(path, key string) string {
	if key == "" || strings.ContainsFunc(key, func(r rune) bool {
		return r != '_' && r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// parent strips the last key or index from a path. A quoted key with a
// "." or "[" in it strips short, to a path that was never recorded; locate
// then keeps climbing.
func parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}
