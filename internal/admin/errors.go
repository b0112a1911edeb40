package admin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/voxhost/voxhost/host/plugin"
)

// RejectedError is a plugin or pipeline set that was refused; what was
// there before stays.
type RejectedError struct {
	// Plugin names the plugin refused, empty for a pipeline reload.
	Plugin string
	// Reason says why, in words a person can act on.
	Reason string
	// Problems lists every validation problem, when the module was invalid.
	Problems []string
	// err is the cause.
	err error
}

func (e *RejectedError) Error() string { return e.Reason }
func (e *RejectedError) Unwrap() error { return e.err }

func rejected(name string, err error) *RejectedError {
	re := &RejectedError{Plugin: name, Reason: err.Error(), err: err}
	var ve *plugin.ValidationError
	if errors.As(err, &ve) {
		re.Problems = ve.Problems
	}
	return re
}

// InUseError refuses to delete a plugin that routes use, in either
// direction.
type InUseError struct {
	Plugin    string
	Pipelines []string
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("plugin %s is used by pipeline %s: change those pipelines in the config file and reload first",
		e.Plugin, strings.Join(e.Pipelines, ", "))
}

// NotFoundError is a name that no plugin has.
type NotFoundError struct{ Plugin, Reason string }

func (e *NotFoundError) Error() string { return e.Reason }

// BadRequestError is a request that cannot be carried out as asked.
type BadRequestError struct{ Reason string }

func (e *BadRequestError) Error() string { return e.Reason }
