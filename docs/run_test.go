//go:build unix

package docs

import (
	"bytes"
	"context"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunnableBlocks: every sh block marked <!-- runs --> runs with bash
// (-e, -o pipefail) in a copy of the project, with runner built from this
// tree on the PATH and a free port in PORT, and exits 0.
func TestRunnableBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds runner and runs the docs' commands")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "runner"), "./cmd/runner")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "RUNNER_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	for _, p := range readPages(t) {
		for _, b := range p.blocks {
			if b.marker != markRuns {
				continue
			}
			t.Run(p.path+":"+strconv.Itoa(b.line), func(t *testing.T) {
				if b.info != "sh" && b.info != "bash" {
					t.Fatalf("a block marked %q must be sh, not %q", markRuns, b.info)
				}
				dir := t.TempDir()
				copyProject(t, dir)
				if out, err := runBlock(b.text, dir, append(env, "PORT="+freePort(t))); err != nil {
					t.Errorf("%s:%d: %v\n%s", p.path, b.line, err, out)
				}
			})
		}
	}
}

// copyProject copies the repository's files into dir, without version
// control, dependencies installed for tests, stores and binaries.
func copyProject(t *testing.T, dir string) {
	t.Helper()
	skip := map[string]bool{".git": true, "node_modules": true, ".runner": true, "bin": true}
	err := filepath.WalkDir(root, func(src string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if skip[e.Name()] {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, src)
		dst := filepath.Join(dir, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(dst, 0o755)
		case e.Type().IsRegular():
			data, err := os.ReadFile(src)
			if err != nil {
				return err
			}
			info, _ := e.Info()
			return os.WriteFile(dst, data, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runBlock runs script with bash in dir, in a process group of its own,
// for at most two minutes; whatever it left running (a server started in
// the background) is killed when it ends.
func runBlock(script, dir string, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	err := cmd.Wait()
	return out.Bytes(), err
}

// freePort returns a TCP port of the loopback interface that nothing
// listens on.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
