package app

import (
	"fmt"
	"strings"

	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/config"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/transport"
)

// Checker is the config.Checker of voxhost serve: it checks what a route
// names in the runtime's vocabulary (failure policies and budgets, bot
// protocols, codecs and rates, URL templates, dialect options), so that a
// route that cannot run is refused with its file's line at start-up, not
// at its first call.
type Checker struct{}

// CheckStage checks a stage's on_error and budget_ms.
func (Checker) CheckStage(st config.Stage) (string, error) {
	if _, err := pipeline.ParsePolicy(st.OnError); err != nil {
		return "on_error", err
	}
	if st.BudgetMs != 0 {
		if err := pipeline.CheckBudgetMs(st.BudgetMs); err != nil {
			return "budget_ms", err
		}
	}
	return "", nil
}

// CheckUpstream checks an upstream's URL template, its protocol, the
// audio format the protocol is to carry and the dialect's options.
func (Checker) CheckUpstream(u *config.Upstream) (string, error) {
	if err := transport.CheckURLTemplate(u.URL); err != nil {
		return "url", err
	}
	if u.Protocol == "" {
		return "protocol", fmt.Errorf("missing; name one of: %s", strings.Join(transport.DialectNames(), ", "))
	}
	d, err := transport.LookupDialect(u.Protocol)
	if err != nil {
		return "protocol", err
	}
	// The codec alone first, so that an unknown codec is not blamed on
	// the rate.
	if _, err := codec.ParseFormat(u.Codec, 0); err != nil {
		return "codec", err
	}
	f, err := codec.ParseFormat(u.Codec, u.Rate)
	if err != nil {
		return "rate", err
	}
	if err := d.CheckFormat(f); err != nil {
		key := "codec"
		if u.Rate != 0 {
			key = "rate"
		}
		return key, fmt.Errorf("protocol %s cannot carry %s: %v", d.Name(), f, err)
	}
	if err := transport.CheckOptions(d, u.Options); err != nil {
		return "options", err
	}
	return "", nil
}

// stageSpecs are the config's stages as the pipeline builds them.
func stageSpecs(stages []config.Stage) []pipeline.StageSpec {
	if stages == nil {
		return nil
	}
	specs := make([]pipeline.StageSpec, len(stages))
	for i, st := range stages {
		specs[i] = pipeline.StageSpec(st)
	}
	return specs
}

// configStages are stages of an inline spec (--pipeline) as the config
// writes them.
func configStages(specs []pipeline.StageSpec) []config.Stage {
	stages := make([]config.Stage, len(specs))
	for i, st := range specs {
		stages[i] = config.Stage(st)
	}
	return stages
}
