//go:build !unix

package plugin

import "github.com/tetratelabs/wazero/experimental"

// mmapAllocator, where there is no mmap, is a Go-heap allocator that still
// enforces the per-instance page limit.
type mmapAllocator struct{ limitBytes uint64 }

func (a mmapAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	return &sliceMemory{limitBytes: a.limitBytes}
}
