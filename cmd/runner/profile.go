package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names the file `runner serve` writes a CPU profile of its
// whole life to, when set: for measuring the server as a process.
const cpuProfileEnv = "RUNNER_CPUPROFILE"

// startCPUProfile starts the CPU profile cpuProfileEnv asks for and
// returns what ends it; without the variable it does nothing.
func startCPUProfile() (stop func(), err error) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
