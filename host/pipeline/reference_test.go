package pipeline_test

import (
	"strings"
	"testing"

	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/internal/signal"
)

// refsub subtracts its reference from the frame: with the frame itself as
// the reference the output is silence, with none the frame is unchanged.
func TestReferenceReachesTheStageThatAsks(t *testing.T) {
	c := newCatalog(t)
	p := build(t, c, "gain db=0 | "+fixture("refsub")+" | gain db=0", pipeline.CallConfig{})
	if !p.WantsReference() {
		t.Fatal("WantsReference = false for a pipeline with refsub")
	}
	pcm := signal.Speech(8000, 0.02)
	src := &pipeline.PCM{Frame: pcm}
	p.SetReference(pcm)
	out, err := p.Process(src)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range signal.Samples(out) {
		if s != 0 {
			t.Fatalf("sample %d = %d after subtracting the frame's own reference, want 0", i, s)
		}
	}
	// The reference lasts one frame: the next one without SetReference
	// gets silence and passes unchanged.
	out, err = p.Process(src)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(pcm) {
		t.Fatal("a frame without a reference was changed: the previous frame's reference stayed")
	}
	// Half a reference: the stage gets silence, then the half.
	p.SetReference(pcm[len(pcm)/2:])
	out, err = p.Process(src)
	if err != nil {
		t.Fatal(err)
	}
	got, in := signal.Samples(out), signal.Samples(pcm)
	half := len(in) / 2
	for i := range got {
		want := in[i]
		if i >= half { // the reference's sample i-half is pcm's sample i
			want = 0
		}
		if got[i] != want {
			t.Fatalf("sample %d = %d, want %d", i, got[i], want)
		}
	}
}

func TestPipelineWithoutReferenceStageWantsNone(t *testing.T) {
	p := build(t, newCatalog(t), "gain db=-6 | passthrough", pipeline.CallConfig{})
	if p.WantsReference() {
		t.Fatal("WantsReference = true without a stage that exports vox_reference")
	}
}

func TestReferenceStageAfterARateChangeIsRefused(t *testing.T) {
	c := newCatalog(t)
	specs, err := pipeline.ParseSpec("resample to=16000 | " + fixture("refsub"))
	if err != nil {
		t.Fatal(err)
	}
	def, err := c.Definition(t.Context(), "test", specs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := def.Instantiate(t.Context(), pipeline.CallConfig{})
	if err == nil {
		p.Close(t.Context())
		t.Fatal("a reference stage at 16 kHz behind a resampler from 8 kHz was accepted")
	}
	if !strings.Contains(err.Error(), "put it before the rate change") {
		t.Fatalf("error %q does not say what to do", err)
	}
}

func TestReferenceCostsNoAllocation(t *testing.T) {
	p := build(t, newCatalog(t), fixture("refsub")+" | gain db=3", pipeline.CallConfig{})
	pcm := signal.Speech(8000, 0.02)
	ref := signal.Speech(8000, 0.02)
	src := &pipeline.PCM{Frame: pcm}
	allocs := testing.AllocsPerRun(2000, func() {
		p.SetReference(ref)
		if _, err := p.Process(src); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a frame with its reference allocates %.2f times; the hot path must allocate nothing", allocs)
	}
}
