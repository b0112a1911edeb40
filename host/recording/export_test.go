package recording

import (
	"log/slog"
	"time"
)

// SetCreate makes spec open its files with create.
func SetCreate(spec *Spec, create func(path string) (Writer, error)) {
	spec.create = func(path string) (file, error) { return create(path) }
}

// Writer is what a recorder writes a file through, for tests that inject
// one.
type Writer = file

// OpenIdle is Open without the writer goroutine: the test writes with
// WriteNow and ends with Finish, on its own goroutine.
func OpenIdle(spec *Spec, id string, started time.Time, formats Formats, m *Metrics, log *slog.Logger) (*Recorder, error) {
	return open(spec, id, started, formats, m, log)
}

// WriteNow is one turn of the writer.
func (r *Recorder) WriteNow() { r.write(false) }

// Finish is the writer's last turn.
func (r *Recorder) Finish() {
	r.write(false)
	r.finish()
}
