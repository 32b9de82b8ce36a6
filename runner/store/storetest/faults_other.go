//go:build !linux

package storetest

import "testing"

// Unwritable skips the test: files are made unwritable on Linux only.
func Unwritable(t *testing.T, paths ...string) (repair func()) {
	t.Skip("files are made unwritable on Linux only (chattr +i)")
	return nil
}

// SmallDisk skips the test: a small disk is mounted on Linux only.
func SmallDisk(t *testing.T, size int) string {
	t.Skip("a small disk is mounted on Linux only (tmpfs)")
	return ""
}
