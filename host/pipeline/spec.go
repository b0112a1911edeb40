package pipeline

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxBudgetMs is the largest budget_ms a stage may set: one minute.
const MaxBudgetMs = 60000

// StageSpec is one stage of a pipeline as a person writes it: a plugin
// reference (a stock name, a name in the plugin directory or a .wasm path)
// and its configuration.
type StageSpec struct {
	// Plugin is the reference to resolve.
	Plugin string `json:"plugin" yaml:"plugin"`
	// Config is the plugin's configuration object.
	Config map[string]any `json:"config,omitempty" yaml:"config"`
	// OnError is the stage's failure policy: "bypass" (default) or "end_call".
	OnError string `json:"on_error,omitempty" yaml:"on_error"`
	// BudgetMs caps each call into the stage's plugin, in milliseconds; a
	// call that runs longer is stopped and is a fault of kind "budget".
	// 0 means the host's default (plugin.DefaultBudget).
	BudgetMs int `json:"budget_ms,omitempty" yaml:"budget_ms"`
}

// Budget is BudgetMs as a duration; 0 means the host's default.
func (s StageSpec) Budget() time.Duration { return time.Duration(s.BudgetMs) * time.Millisecond }

// CheckBudgetMs explains why a budget_ms value is unusable, or returns nil.
func CheckBudgetMs(ms int) error {
	if ms < 1 || ms > MaxBudgetMs {
		return fmt.Errorf("must be a whole number of milliseconds from 1 to %d, got %d", MaxBudgetMs, ms)
	}
	return nil
}

// ConfigJSON encodes the configuration as the JSON object vox_init receives.
func (s StageSpec) ConfigJSON() ([]byte, error) {
	if len(s.Config) == 0 {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(s.Config)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: config cannot be encoded as JSON: %w", s.Plugin, err)
	}
	return b, nil
}

// ParseSpec reads a pipeline written inline: stages separated by "|", each
// a plugin reference followed by key=value pairs, e.g.
// "gain db=-6 | passthrough". Values that parse as numbers or booleans become
// JSON numbers and booleans; the key on_error sets the stage's policy and
// budget_ms its budget.
func ParseSpec(spec string) ([]StageSpec, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("empty pipeline: name at least one plugin, e.g. \"gain db=-6 | passthrough\"")
	}
	var stages []StageSpec
	for i, part := range strings.Split(spec, "|") {
		fields := strings.Fields(part)
		if len(fields) == 0 {
			return nil, fmt.Errorf("pipeline %q: stage %d is empty (two '|' in a row?)", spec, i+1)
		}
		st := StageSpec{Plugin: fields[0]}
		if strings.Contains(st.Plugin, "=") {
			return nil, fmt.Errorf("pipeline %q: stage %d starts with %q; a stage starts with a plugin name, then key=value pairs", spec, i+1, st.Plugin)
		}
		for _, kv := range fields[1:] {
			key, value, ok := strings.Cut(kv, "=")
			if !ok || key == "" {
				return nil, fmt.Errorf("pipeline %q: stage %d (%s): %q is not key=value", spec, i+1, st.Plugin, kv)
			}
			if key == "on_error" {
				if _, err := ParsePolicy(value); err != nil {
					return nil, fmt.Errorf("pipeline %q: stage %d (%s): %w", spec, i+1, st.Plugin, err)
				}
				st.OnError = value
				continue
			}
			if key == "budget_ms" {
				ms, err := strconv.Atoi(value)
				if err == nil {
					err = CheckBudgetMs(ms)
				} else {
					err = fmt.Errorf("must be a whole number of milliseconds, got %q", value)
				}
				if err != nil {
					return nil, fmt.Errorf("pipeline %q: stage %d (%s): budget_ms %w", spec, i+1, st.Plugin, err)
				}
				st.BudgetMs = ms
				continue
			}
			if st.Config == nil {
				st.Config = map[string]any{}
			}
			if _, dup := st.Config[key]; dup {
				return nil, fmt.Errorf("pipeline %q: stage %d (%s): %s is set twice", spec, i+1, st.Plugin, key)
			}
			st.Config[key] = specValue(value)
		}
		stages = append(stages, st)
	}
	return stages, nil
}

func specValue(v string) any {
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil && json.Valid([]byte(v)) {
		return json.Number(v)
	}
	return v
}
