package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner/access"
)

// TestKeysNew: keys new prints a key and the keys file's line for it,
// which reads back as the principal asked for.
func TestKeysNew(t *testing.T) {
	code, out, errOut := runCLI(t, "keys", "new", "--tenant", "acme", "--principal", "alice", "--role", "ops-lead", "--role", "cfo")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.Contains(errOut, "keys file") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	keys, err := access.ParseKeys("keys.yaml", []byte(lines[1]))
	want := access.Principal{Tenant: "acme", Name: "alice", Roles: []string{"ops-lead", "cfo"}}
	if p, ok := keys.Lookup(lines[0]); err != nil || !ok || !reflect.DeepEqual(p, want) {
		t.Errorf("line %q reads as %v %v %v, want %v", lines[1], p, ok, err, want)
	}
	if code, _, errOut := runCLI(t, "keys", "new", "--role", "ops lead"); code != 2 || !strings.Contains(errOut, `role "ops lead"`) {
		t.Errorf("a bad role: exit %d %s", code, errOut)
	}
}

// TestServeKeysAtTheirLines: serve refuses bad entries of the keys file
// and of runner.yaml's serve.api_keys, each at its file:line:col, before
// it loads anything; a hash pasted from sha256sum is taken.
func TestServeKeysAtTheirLines(t *testing.T) {
	dir := t.TempDir()
	keys, settings := filepath.Join(dir, "keys.yaml"), filepath.Join(dir, "runner.yaml")
	writeFile(t, keys, access.HashKey("k1")+"  -: acme\nsk-live-1: acme\n"+access.HashKey("k2")+": {tenant: acme, role: [ops]}\n")
	writeFile(t, settings, "paths: [nothing]\nserve:\n  api_keys:\n    "+access.HashKey("k3")+": {principal: 'a b'}\n")
	code, _, errOut := runCLI(t, "serve", "--config", settings, "--api-keys", keys, "--store", "memory:")
	if code != 2 || !strings.Contains(errOut, "runner.yaml:4:83: principal \"a b\"") {
		t.Errorf("runner.yaml's bad key: exit %d %s", code, errOut)
	}
	writeFile(t, settings, "paths: [nothing]\n")
	code, _, errOut = runCLI(t, "serve", "--config", settings, "--api-keys", keys, "--store", "memory:")
	if code != 2 || !strings.Contains(errOut, `keys.yaml:2:1: "sk-live-1" is not the SHA-256 of a key`) ||
		!strings.Contains(errOut, `keys.yaml:3:82: unknown field "role" (did you mean "roles"?)`) || strings.Contains(errOut, "keys.yaml:1:") {
		t.Errorf("the keys file's bad keys: exit %d %s", code, errOut)
	}
}

// TestExecTenantThreads: exec --tenant T names T's threads, stored as
// /T/ID (as the server stores T's thread ID), and the resume hint names
// the thread so it can be pasted.
func TestExecTenantThreads(t *testing.T) {
	t.Chdir("../..")
	dir := t.TempDir()
	code, _, errOut := runCLI(t, execArgs(dir, "ops_actions", "--tenant", "acme", "--input", `{"user_input": "restart nginx.service"}`, "--thread", "ops")...)
	if code != 3 || !strings.Contains(errOut, "thread /acme/ops") || !strings.Contains(errOut, "--resume /acme/ops") {
		t.Fatalf("exit %d, want 3: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, execArgs(dir, "ops_actions", "--tenant", "other", "--resume", "/acme/ops")...); code != 2 || !strings.Contains(errOut, "is tenant acme's, not other's") {
		t.Errorf("resume of acme's thread as other: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, execArgs(dir, "ops_actions", "--resume", "ops", "--value", `{"approved": true}`)...); code == 0 {
		t.Errorf("the default tenant's ops resumed acme's: %s", errOut)
	}
	code, out, errOut := runCLI(t, execArgs(dir, "ops_actions", "--tenant", "acme", "--resume", "ops", "--value", `{"approved": true}`)...)
	if code != 0 || !strings.Contains(out, `"status": "DRY_RUN"`) {
		t.Fatalf("resume as acme: exit %d: %s%s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "threads", "list", "--store", "sqlite:"+filepath.Join(dir, "state.db")); code != 0 || !strings.Contains(out, "/acme/ops") {
		t.Errorf("threads list: exit %d\n%s", code, out)
	}
}
