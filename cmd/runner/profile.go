package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
)

// cpuProfileEnv names the file a command (`runner serve` for its whole
// life) writes its CPU profile to, when set: for measuring runner as a
// process.
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

// oneShot has the collector of a command that ends within a second
// (validate, test) run a quarter as often, for a few MB more: it takes a
// sixth off a validate of the shipped definitions. A GOGC the user set
// wins.
func oneShot() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}
