package voxhost

import "unsafe"

// BufferBytes is the capacity of the frame buffer: 8192 samples, over half a
// second at 16 kHz. The reference host asks for 1600 bytes (100 ms at 8 kHz),
// or 3200 in a chain that runs at 16 kHz.
const BufferBytes = 16384

// BufferSamples is BufferBytes in samples.
const BufferSamples = BufferBytes / SampleBytes

// frameStore holds the frame buffer, with 16 bytes of slack so that it can
// start on a 16-byte boundary (the ABI requires 2, recommends 16). A
// package-level array is in the module's data segment: its address never
// changes (Go's collector does not move objects anyway), so the address
// vox_buffer returns stays valid for the instance's life, and neither the
// buffer nor any frame ever costs an allocation.
var frameStore [BufferSamples + 8]int16

// frameStart is the index in frameStore of the buffer's first sample.
var frameStart = -1

// capacity is the buffer size the host asked for, in samples: frames are
// never longer, and Process's slice has this capacity.
var capacity int

// frame is the 16-byte aligned buffer, BufferSamples long.
func frame() []int16 {
	if frameStart < 0 {
		addr := uintptr(unsafe.Pointer(&frameStore[0]))
		frameStart = int((16 - addr%16) % 16 / SampleBytes)
	}
	return frameStore[frameStart : frameStart+BufferSamples]
}

// frameBytes is the buffer as bytes: where the config and the call metadata
// arrive.
func frameBytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&frame()[0])), BufferBytes)
}

// The exports of ABI v1. On GOARCH=wasm //go:wasmexport makes each an export
// of the module, whatever package it is in; elsewhere it is ignored, so that
// the SDK and a plugin's logic can be tested natively with go test.

//go:wasmexport voxhost_abi_v1
func voxhostABIv1() {}

//go:wasmexport vox_buffer
func voxBuffer(capacityBytes int32) int32 {
	if capacityBytes < 0 || capacityBytes > BufferBytes {
		return 0 // ABI: "cannot provide that capacity"
	}
	// Capacities never decrease, but a smaller one would be harmless: the
	// buffer is always BufferBytes long.
	capacity = max(capacity, int(capacityBytes)/SampleBytes)
	return int32(uintptr(unsafe.Pointer(&frame()[0])))
}

//go:wasmexport vox_init
func voxInit(configLen int32) int32 {
	if registered == nil {
		return notRegistered()
	}
	if configLen < 0 || int(configLen) > capacity*SampleBytes {
		return StatusBadState
	}
	cfg, err := ParseConfig(frameBytes()[:configLen])
	if err != nil {
		Log(LogError, "config: "+err.Error())
		return StatusBadConfig
	}
	p, ok := registered.(Initer)
	if !ok {
		if len(cfg.members) > 0 {
			Log(LogError, "config given but the plugin does not implement Init")
			return StatusBadConfig
		}
		return StatusOK
	}
	if err := p.Init(cfg); err != nil {
		Log(LogError, err.Error())
		return StatusBadConfig
	}
	return StatusOK
}

//go:wasmexport vox_rate
func voxRate(inputRate int32) int32 {
	if registered == nil {
		return notRegistered()
	}
	p, ok := registered.(Rater)
	if !ok {
		return inputRate
	}
	if inputRate <= 0 {
		return StatusBadRate
	}
	out, err := p.Rate(uint32(inputRate))
	if err == nil && out > 1<<31-1 {
		err = errRateTooHigh
	}
	if err != nil {
		Log(LogError, err.Error())
		return StatusBadRate
	}
	return int32(out)
}

//go:wasmexport vox_event
func voxEvent(kind, arg int32) int32 {
	if registered == nil {
		return notRegistered()
	}
	p, ok := registered.(EventHandler)
	if !ok {
		return StatusOK
	}
	return int32(p.Event(Event{Kind: kind, Arg: arg}))
}

//go:wasmexport vox_process
func voxProcess(samples int32) int32 {
	if registered == nil {
		return notRegistered()
	}
	if samples <= 0 || int(samples) > capacity {
		return StatusBadLength
	}
	// The slice's capacity is the buffer's, so that a plugin that outputs
	// more samples than it got (a resampler) can reslice into the rest.
	return int32(registered.Process(frame()[:samples:capacity]))
}

func notRegistered() int32 {
	Log(LogError, "no plugin registered: call voxhost.Register from an init function of the main package")
	return StatusBadState
}

type sdkError string

func (e sdkError) Error() string { return string(e) }

const errRateTooHigh = sdkError("Rate returned an output rate above 2147483647 Hz")
