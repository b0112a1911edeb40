// Package pipeline runs one call's chain of processors. A hop is a function
// call, not a goroutine wake-up: Process fills the first stage's buffer,
// calls each stage in place and crosses from one sandbox to the next with
// exactly one copy, allocating nothing. WebAssembly instances and native Go
// processors are both Stages, so the same chain measures either.
package pipeline
