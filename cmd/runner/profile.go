package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
)

// The variables that name the files a command (`runner serve` for its
// whole life) writes its profiles to, when set: for measuring runner as
// a process. The CPU profile covers the command; the allocation profile
// ("allocs": every allocation sampled since the start, and what is live)
// is written when it ends.
const (
	cpuProfileEnv = "RUNNER_CPUPROFILE"
	memProfileEnv = "RUNNER_MEMPROFILE"
)

// startProfiles starts the profiles the variables ask for and returns
// what ends them; without the variables it does nothing.
func startProfiles() (stop func(), err error) {
	stopCPU := func() {}
	if path := os.Getenv(cpuProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
		}
		stopCPU = func() { pprof.StopCPUProfile(); f.Close() }
	}
	return func() {
		stopCPU()
		if path := os.Getenv(memProfileEnv); path != "" {
			if err := writeProfile(path, "allocs"); err != nil {
				fmt.Fprintf(os.Stderr, "runner: %s: %v\n", memProfileEnv, err)
			}
		}
	}, nil
}

// writeProfile writes the named runtime profile to path.
func writeProfile(path, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// GC percents (GOGC) the commands set unless the user set GOGC; each
// trades memory the command can spare for the collector's CPU.
const (
	// oneShotGC has the collector of a command that ends within a second
	// (validate, test) run a quarter as often, for a few MB more: it takes
	// a sixth off a validate of the shipped definitions.
	oneShotGC = 400
	// serveGC has the collector of `runner serve` run half as often as
	// Go's default: a served run allocates some 190 KB, so at 900 runs a
	// second the default collected 40 times a second, a tenth of the
	// server's CPU (a sixth with allocation). The heap peaks at three
	// times what is live (the compiled project and the runs in flight)
	// instead of twice.
	serveGC = 200
)

// setGC sets the collector's GC percent to percent; a GOGC the user set
// wins.
func setGC(percent int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}
