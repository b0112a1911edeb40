// Package reference gives a voxhost plugin the far-end reference (abi/ABI.md
// §11): what the caller was sent, time-aligned with the frame the plugin is
// processing, the input an echo canceller needs. Importing the package is
// asking for it: the module then exports vox_reference, and before every
// vox_process the host writes the frame's reference into a buffer of this
// package; a plugin that does not import it never gets one (and the host
// copies nothing for it).
//
//	import "github.com/voxhost/voxhost/sdk/go/reference"
//
//	func (p *canceller) Process(s []int16) int {
//		far := reference.Frame(len(s))
//		...
//	}
//
// The reference is at the plugin's input rate, which must be the rate its
// pipeline is fed at (the host refuses a plugin that asks for it behind a
// resampler); where there is no far end (an outbound pipeline, voxhost run
// without --far-end) it is silence.
package reference

import (
	"unsafe"

	voxhost "github.com/voxhost/voxhost/sdk/go"
)

// store holds the reference buffer, 16-byte aligned as the frame buffer is,
// in the module's data: its address never changes and no frame allocates.
var store [voxhost.BufferSamples + 8]int16

var start = -1

func buffer() []int16 {
	if start < 0 {
		addr := uintptr(unsafe.Pointer(&store[0]))
		start = int((16 - addr%16) % 16 / voxhost.SampleBytes)
	}
	return store[start : start+voxhost.BufferSamples]
}

//go:wasmexport vox_reference
func voxReference(capacityBytes int32) int32 {
	if capacityBytes < 0 || capacityBytes > voxhost.BufferBytes {
		return 0 // ABI: "cannot provide that capacity"
	}
	return int32(uintptr(unsafe.Pointer(&buffer()[0])))
}

// Frame returns the far-end reference of the frame Process is working on:
// its first n samples, n the frame's length. It is valid until Process
// returns; silence before the host has written one.
func Frame(n int) []int16 {
	return buffer()[:min(max(n, 0), voxhost.BufferSamples)]
}
