//go:build unix

package dsl_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, in all its threads (the
// garbage collector's too); ok is false where it cannot be read.
func cpuTime() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
