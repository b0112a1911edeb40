package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/voxhost/voxhost/host/plugin"
)

// StageDef is a resolved stage: a loaded plugin with its configuration,
// shared by every call of a pipeline.
type StageDef struct {
	Plugin  *plugin.Plugin
	Config  []byte
	OnError Policy
	// Budget caps each call into the stage; 0 means the runtime's default.
	Budget time.Duration
}

// Definition is a named pipeline ready to instantiate for each call.
type Definition struct {
	Name   string
	Stages []StageDef
}

// CallConfig describes the call a pipeline is made for.
type CallConfig struct {
	// InputRate is the rate of the audio entering the chain; 0 means 8000.
	InputRate int
	// MaxFrameMs is the longest frame; 0 means plugin.DefaultMaxFrameMs.
	MaxFrameMs int
	// Sink receives the events plugins emit.
	Sink plugin.Sink
	// Logger receives the plugins' log lines.
	Logger *slog.Logger
	// OnFault hears of every stage failure.
	OnFault func(Fault)
	// Yield is every stage's plugin.InstanceConfig.Yield.
	Yield plugin.Yielder
}

// Instantiate makes the call's instances, in order, each taking the rate
// the stage before it produces.
func (d *Definition) Instantiate(ctx context.Context, cfg CallConfig) (*Pipeline, error) {
	rate := cfg.InputRate
	stages := make([]Stage, 0, len(d.Stages))
	policies := make([]Policy, 0, len(d.Stages))
	fail := func(err error) (*Pipeline, error) {
		for _, s := range stages {
			_ = s.Close(ctx)
		}
		return nil, err
	}
	maxMs := cfg.MaxFrameMs
	if maxMs == 0 {
		maxMs = plugin.DefaultMaxFrameMs
	}
	capacity := 0
	// The stages run one after the other: one machine stack serves them all.
	stack := plugin.NewMachineStack()
	for i, sd := range d.Stages {
		in, err := sd.Plugin.Instantiate(ctx, plugin.InstanceConfig{
			Config: sd.Config, InputRate: rate, MaxFrameMs: maxMs, Sink: cfg.Sink, Logger: cfg.Logger, Budget: sd.Budget,
			Stack: stack, Yield: cfg.Yield,
		})
		if err != nil {
			return fail(fmt.Errorf("pipeline %s, stage %d: %w", d.Name, i+1, err))
		}
		stages = append(stages, in)
		policies = append(policies, sd.OnError)
		rate = in.OutputRate()
		capacity = max(capacity, len(in.Buffer()))
	}
	// A stage must take whatever the stage before it may produce.
	for _, s := range stages {
		if len(s.Buffer()) < capacity {
			if in, ok := s.(*plugin.Instance); ok {
				if err := in.Reserve(capacity); err != nil {
					return fail(fmt.Errorf("pipeline %s: %w", d.Name, err))
				}
			}
		}
	}
	p, err := New(stages, policies, cfg.OnFault)
	if err != nil {
		return fail(fmt.Errorf("pipeline %s: %w", d.Name, err))
	}
	return p, nil
}

// EachDroppedEmits calls fn with the name of each plugin stage and the
// emits the host dropped from it so far (plugin.Instance.DroppedEmits),
// bypassed stages included. Call it after Close for a call's totals:
// plugins may emit on call_end.
func (p *Pipeline) EachDroppedEmits(fn func(plugin string, drops plugin.EmitDrops)) {
	for _, s := range p.stages {
		if in, ok := s.(*plugin.Instance); ok {
			fn(in.Name(), in.DroppedEmits())
		}
	}
}
