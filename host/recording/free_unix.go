//go:build unix

package recording

import "golang.org/x/sys/unix"

// freeBytes is the space of dir's file system that an unprivileged writer
// may still use (statfs's f_bavail): the root reserve does not count.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
