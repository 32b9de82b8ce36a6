package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal: its controlling side, to read what is
// written to the terminal side.
func openPTY(t *testing.T) (ctl, term *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	var unlock, n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ctl.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ctl, term
}

// TestExecProgressOnTerminal: on a terminal, exec shows each node as it
// starts and completes its line when it ends; a pause ends the line.
// Written elsewhere (a pipe, a file), stderr has no progress.
func TestExecProgressOnTerminal(t *testing.T) {
	t.Setenv("RUNNER_PATHS", "testdata/contract.yaml")
	ctl, term := openPTY(t)
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(ctl) // until the terminal side is closed (EIO)
		read <- string(b)
	}()
	var out bytes.Buffer
	code := run([]string{"exec", "contract", "--store", "memory:", "--input", `{"mode": "ask"}`}, &out, term)
	term.Close()
	got := strings.ReplaceAll(<-read, "\r\n", "\n")
	ctl.Close()
	for _, want := range []string{`  route                …\r  route +\d+ms → ask\n`, `  ask                  … paused\n`, `paused at ask \(question\): Go on\?\n`} {
		if code != exitPaused || !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("exit %d; the terminal lacks %q:\n%q", code, want, got)
		}
	}
	var errOut bytes.Buffer
	run([]string{"exec", "contract", "--store", "memory:", "--input", `{"mode": "ask"}`}, &out, &errOut)
	if strings.Contains(errOut.String(), "route") {
		t.Errorf("progress off a terminal:\n%s", errOut.String())
	}
}
