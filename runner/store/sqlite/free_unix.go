//go:build unix

package sqlite

import "golang.org/x/sys/unix"

// freeBytes is the space free to this process on the disk of dir, -1 if
// unknown.
func freeBytes(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
