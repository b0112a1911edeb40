//go:build unix

package plugin

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapAllocator backs each instance's linear memory with its own anonymous
// mapping, reserved once at the largest size the instance may ever reach
// (its declared maximum, capped by the host's page limit):
//
//   - growth beyond the limit fails inside the guest (memory.grow returns
//     -1), which is how the per-instance limit is enforced;
//   - growth never moves the memory, so views of the frame buffer stay valid;
//   - only pages the plugin touches become resident, and the memory leaves
//     the process at Close instead of waiting for the Go GC, which matters
//     at a thousand calls of four instances each.
type mmapAllocator struct{ limitBytes uint64 }

func (a mmapAllocator) Allocate(capacity, max uint64) experimental.LinearMemory {
	reserve := min(max, a.limitBytes)
	if reserve == 0 {
		reserve = capacity
	}
	if reserve < capacity {
		// The declared minimum is over the limit: Load rejects such
		// modules, so this only guards against misuse.
		return &sliceMemory{limitBytes: a.limitBytes}
	}
	buf, err := syscall.Mmap(-1, 0, int(reserve), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		// Out of address space: fall back to the Go heap, limit still enforced.
		return &sliceMemory{limitBytes: a.limitBytes}
	}
	return &mmapMemory{buf: buf}
}

type mmapMemory struct{ buf []byte }

func (m *mmapMemory) Reallocate(size uint64) []byte {
	if m.buf == nil || size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size]
}

func (m *mmapMemory) Free() {
	if m.buf != nil {
		_ = syscall.Munmap(m.buf)
		m.buf = nil
	}
}
