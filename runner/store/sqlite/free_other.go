//go:build !unix

package sqlite

// freeBytes is -1: the free space of a disk is not asked for here.
func freeBytes(string) int64 { return -1 }
