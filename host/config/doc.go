// Package config describes voxhost's YAML configuration file and checks
// it: the listen address, plugin runtime settings, call limits,
// authentication, allowed browser origins, playout bounds and the named
// routes calls run: their pipelines in each direction and the voice bot a
// call may be relayed to.
//
// Config is a leaf: it imports no other voxhost package, so that a program
// can read, write or check the file without the runtime. What only the
// runtime knows (a stage's failure policies and budget, an upstream's
// protocol, codec, rate, URL template and options) a Checker checks, which
// the program that maps the file onto the runtime passes to ParseChecked:
// voxhost serve's is internal/app's, which then builds the server from the
// Config. Each section of the file is a type of its own (Limits, Playout,
// Route, ...), so that a new section is a new type, its keys in the
// decoder's table (configFields) and its checks beside it.
//
// Decoding is strict, because a misspelt key silently left at its default
// (an idle timeout, an auth token list) is worse than a refusal to start.
// Every error about the file's content names the place it is about, as
// "FILE:LINE:COL: key: message" on one line, so a person can go straight
// to the line; that holds for the checks Validate and a Checker make after
// decoding too, which find their line again from the key path of the
// offending value.
package config
