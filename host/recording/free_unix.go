//go:build unix

package recording

import (
	"os"

	"golang.org/x/sys/unix"
)

// freeBytes is the space of dir's file system that an unprivileged writer
// may still use (statfs's f_bavail): the root reserve does not count. It
// asks through the open directory, so that the writer's turn allocates no
// path.
func freeBytes(dir *os.File) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(dir.Fd()), &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
