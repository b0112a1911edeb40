package reference

import (
	"testing"

	voxhost "github.com/voxhost/voxhost/sdk/go"
)

func TestBufferIsAlignedBoundedAndSilentUntilWritten(t *testing.T) {
	if p := voxReference(voxhost.BufferBytes); p == 0 || p%16 != 0 {
		t.Fatalf("vox_reference(%d) = %d, want a 16-byte aligned address", voxhost.BufferBytes, p)
	}
	if p := voxReference(voxhost.BufferBytes + 2); p != 0 {
		t.Fatalf("vox_reference past the buffer = %d, want 0", p)
	}
	f := Frame(160)
	if len(f) != 160 {
		t.Fatalf("Frame(160) has %d samples", len(f))
	}
	for i, s := range f {
		if s != 0 {
			t.Fatalf("sample %d = %d before the host wrote any", i, s)
		}
	}
	f[3] = 7 // as the host writes it
	if Frame(160)[3] != 7 {
		t.Fatal("Frame does not see what the host wrote")
	}
}
