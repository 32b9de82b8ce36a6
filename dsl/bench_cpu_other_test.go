//go:build !unix

package dsl_test

import "time"

// cpuTime is the CPU time the process has used; ok is false where it
// cannot be read, as here.
func cpuTime() (time.Duration, bool) { return 0, false }
