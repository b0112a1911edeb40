//go:build !cgo

package nativeplugin

import (
	"context"
	"errors"
	"fmt"
)

// Stage is a natively compiled stock plugin; without cgo there are none.
type Stage struct{}

// ErrNoBuild is wrapped by Open's error for a plugin with no native build.
var ErrNoBuild = errors.New("nativeplugin: no native build of that plugin (voxhost was built without cgo)")

// Open fails: this build has no native plugins.
func Open(name string, _ []byte, _ int) (*Stage, error) {
	return nil, fmt.Errorf("%w: %q", ErrNoBuild, name)
}

// Available is false: this build has no native plugins.
func Available(string) bool { return false }

// Name is empty.
func (*Stage) Name() string { return "" }

// Buffer is nil.
func (*Stage) Buffer() []byte { return nil }

// Process fails.
func (*Stage) Process(int) (int, error) { return 0, ErrNoBuild }

// Event fails.
func (*Stage) Event(int32, int32, []byte) (int, error) { return 0, ErrNoBuild }

// Emits is 0.
func (*Stage) Emits() int64 { return 0 }

// InputRate is 0.
func (*Stage) InputRate() int { return 0 }

// OutputRate is 0.
func (*Stage) OutputRate() int { return 0 }

// Close does nothing.
func (*Stage) Close(context.Context) error { return nil }

// Rust is false: this build has no native plugins.
func Rust(string) bool { return false }
