// Package config reads voxhost's YAML configuration file: the listen
// address, plugin runtime settings, call limits, authentication, allowed
// browser origins, playout bounds and the named routes calls run: their
// pipelines in each direction and the voice bot a call may be relayed to.
//
// Config is a leaf: it parses and validates, and internal/app maps it onto the
// server. It checks an upstream with what transport and codec say (the
// protocol, its formats and options, the URL template) so that a route
// that cannot run is refused with its line, not at the first call.
//
// Decoding is strict, because a misspelt key silently left at its default
// (an idle timeout, an auth token list) is worse than a refusal to start.
// Every error about the file's content names the place it is about, as
// "FILE:LINE:COL: key: message" on one line, so a person can go straight
// to the line; that holds for the checks Validate makes after decoding too,
// which find their line again from the key path of the offending value.
package config
