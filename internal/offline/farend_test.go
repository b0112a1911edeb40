package offline_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxhost/voxhost/internal/audiofile"
	"github.com/voxhost/voxhost/internal/offline"
	"github.com/voxhost/voxhost/internal/signal"
)

// refsub subtracts its reference from the frame: fed the input itself as the
// far end, frame for frame, the output is silence; where the far end is
// shorter, the rest passes unchanged.
func TestFarEndIsTheReferenceFrameForFrame(t *testing.T) {
	in := signal.Speech(8000, 0.5)
	opts := options(t, filepath.Join("..", "..", "host", "plugin", "testdata", "refsub.wasm"), in)
	far := in[:len(in)/2+100] // not a whole frame: the reference ends mid-frame
	opts.FarEnd = filepath.Join(t.TempDir(), "far.wav")
	if err := audiofile.WritePCM(opts.FarEnd, far, 8000); err != nil {
		t.Fatal(err)
	}
	opts.Events = &strings.Builder{}
	if _, err := offline.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	out, _, err := audiofile.ReadPCM(opts.Out)
	if err != nil {
		t.Fatal(err)
	}
	got, want := signal.Samples(out), signal.Samples(in)
	for i := range want {
		w := want[i]
		if i < len(far)/2 {
			w = 0
		}
		if got[i] != w {
			t.Fatalf("sample %d = %d, want %d (the far end covers %d samples)", i, got[i], w, len(far)/2)
		}
	}
}

func TestFarEndNeedsAStageThatAsks(t *testing.T) {
	in := signal.Speech(8000, 0.1)
	opts := options(t, "gain db=0", in)
	opts.FarEnd = filepath.Join(t.TempDir(), "far.wav")
	if err := audiofile.WritePCM(opts.FarEnd, in, 8000); err != nil {
		t.Fatal(err)
	}
	opts.Events = &strings.Builder{}
	_, err := offline.Run(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "no stage of the pipeline asks for the far-end reference") {
		t.Fatalf("err = %v, want the far end refused", err)
	}
}

func TestFarEndAtAnotherRateIsRefused(t *testing.T) {
	in := signal.Speech(8000, 0.1)
	opts := options(t, filepath.Join("..", "..", "host", "plugin", "testdata", "refsub.wasm"), in)
	opts.FarEnd = filepath.Join(t.TempDir(), "far.wav")
	if err := audiofile.WritePCM(opts.FarEnd, signal.Speech(16000, 0.1), 16000); err != nil {
		t.Fatal(err)
	}
	opts.Events = &strings.Builder{}
	_, err := offline.Run(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "the reference must be at the input's rate") {
		t.Fatalf("err = %v, want the rate refused", err)
	}
}
