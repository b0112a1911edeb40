package recording

// SetCreate makes spec open its files with create.
func SetCreate(spec *Spec, create func(path string) (Writer, error)) {
	spec.create = func(path string) (file, error) { return create(path) }
}

// Writer is what a recorder writes a file through, for tests that inject
// one.
type Writer = file
