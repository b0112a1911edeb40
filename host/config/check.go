package config

// Checker checks the values whose vocabulary belongs to the runtime rather
// than to the file: a stage's on_error policy and the largest budget_ms,
// an upstream's URL template, protocol, codec, rate and options. Config
// imports no runtime package (it is a leaf), so the program that maps the
// file onto the runtime (internal/app in voxhost serve) passes one to
// ParseChecked, and its errors come back at the file's line and column
// like config's own.
//
// Each method returns the key, relative to what it checks, that its error
// is about ("on_error", "protocol"), and the error, whose message is the
// rest of the line: "pipelines.bot.upstream.protocol: " + err.Error().
type Checker interface {
	// CheckStage checks one stage of a route, after config has checked
	// that it names a plugin.
	CheckStage(st Stage) (key string, err error)
	// CheckUpstream checks a route's upstream, after config has checked
	// that it has a URL and before it checks the headers.
	CheckUpstream(u *Upstream) (key string, err error)
}

// checked places a Checker's answer about the value at key path at, key
// being relative to it.
func checked(at, key string, err error) error {
	if err == nil {
		return nil
	}
	if key != "" {
		at += "." + key
	}
	return invalid(at, "%v", err)
}
