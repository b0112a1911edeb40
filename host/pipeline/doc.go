// Package pipeline runs one call's chain of processors. A hop is a function
// call, not a goroutine wake-up: Process fills the first stage's buffer,
// calls each stage in place and crosses from one sandbox to the next with
// exactly one copy, allocating nothing. WebAssembly instances and native Go
// processors are both Stages, so the same chain measures either.
//
// A program that embeds voxhost writes a route's stages as StageSpecs (or
// an inline spec for ParseSpec), has host/catalog turn them into a
// Definition, and gives that to host/server's Route; a Definition makes
// one Pipeline per call.
package pipeline
