package plugin

// sliceMemory is linear memory on the Go heap that refuses to grow past the
// host's per-instance limit; the fallback where mappings are unavailable.
type sliceMemory struct {
	limitBytes uint64
	buf        []byte
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.limitBytes {
		return nil
	}
	if size > uint64(cap(m.buf)) {
		grown := make([]byte, size, max(size, 2*uint64(cap(m.buf))))
		copy(grown, m.buf)
		m.buf = grown
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }
