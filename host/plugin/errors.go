package plugin

import (
	"fmt"
	"strings"
	"time"

	"github.com/voxhost/voxhost/abi"
)

// ValidationError lists every reason a module is not a usable plugin.
type ValidationError struct {
	// Plugin names the module, usually its file name.
	Plugin string
	// Problems holds one sentence per problem found.
	Problems []string
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return fmt.Sprintf("plugin %s: %s", e.Plugin, e.Problems[0])
	}
	return fmt.Sprintf("plugin %s: %d problems: %s", e.Plugin, len(e.Problems), strings.Join(e.Problems, "; "))
}

// ErrorKind classifies a failure of a call into a plugin.
type ErrorKind int

const (
	// KindTrap is a WebAssembly trap: unreachable, out-of-bounds access,
	// division by zero, stack exhaustion.
	KindTrap ErrorKind = iota + 1
	// KindStatus is a negative status code returned by the plugin.
	KindStatus
	// KindContract is a result that breaks the ABI, such as an output longer
	// than the buffer.
	KindContract
	// KindBudget is a call the host stopped because it ran longer than its
	// budget (an endless loop, or far too much work for one call).
	KindBudget
)

// String names the kind as metrics and logs label it.
func (k ErrorKind) String() string {
	switch k {
	case KindTrap:
		return "trap"
	case KindStatus:
		return "status"
	case KindContract:
		return "contract"
	case KindBudget:
		return "budget"
	}
	return "unknown"
}

// Error is a failed call into a plugin instance.
type Error struct {
	// Plugin names the module.
	Plugin string
	// Export is the function that failed, e.g. vox_process.
	Export string
	// Frame is the 1-based number of the frame being processed, or 0 when the
	// failure happened outside vox_process.
	Frame uint64
	// Kind says whether the plugin trapped, returned an error status or broke
	// the ABI.
	Kind ErrorKind
	// Status is the negative code the plugin returned, for KindStatus.
	Status int32
	// Reason is the trap message or the explanation of the status.
	Reason string
	// Budget is the time the call was allowed, for KindBudget.
	Budget time.Duration
}

func (e *Error) Error() string {
	where := e.Export
	if e.Frame > 0 {
		where = fmt.Sprintf("%s at frame %d", e.Export, e.Frame)
	}
	switch e.Kind {
	case KindTrap:
		return fmt.Sprintf("plugin %s: trap in %s: %s", e.Plugin, where, e.Reason)
	case KindStatus:
		return fmt.Sprintf("plugin %s: %s returned %d (%s)", e.Plugin, where, e.Status, e.Reason)
	case KindBudget:
		return fmt.Sprintf("plugin %s: exceeded its CPU budget of %v in %s", e.Plugin, e.Budget, where)
	}
	return fmt.Sprintf("plugin %s: %s: %s", e.Plugin, where, e.Reason)
}

// StatusText explains a status code of the ABI.
func StatusText(status int32) string {
	switch status {
	case abi.StatusError:
		return "plugin error"
	case abi.StatusBadConfig:
		return "configuration rejected"
	case abi.StatusBadRate:
		return "sample rate not supported"
	case abi.StatusBadLength:
		return "frame length not supported"
	case abi.StatusBadState:
		return "call out of order"
	}
	return "unknown status code"
}
