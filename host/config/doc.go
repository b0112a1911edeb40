// Package config reads voxhost's YAML configuration file: the listen
// address, plugin runtime settings, call limits, authentication, allowed
// browser origins and the named pipelines calls run through.
//
// Decoding is strict, because a misspelt key silently left at its default
// (an idle timeout, an auth token list) is worse than a refusal to start.
// Every error about the file's content names the place it is about, as
// "FILE:LINE:COL: key: message" on one line, so a person can go straight
// to the line; that holds for the checks Validate makes after decoding too,
// which find their line again from the key path of the offending value.
package config
