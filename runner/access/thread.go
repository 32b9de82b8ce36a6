package access

import (
	"fmt"
	"regexp"
	"strings"
)

// ThreadKey is the store id of the thread tenant knows as id: id itself
// for the default tenant, "/tenant/id" for a named one. The ids clients
// pick contain no "/" (CheckThreadID), so no id of the default tenant
// begins with one, and no two tenants' threads — nor their child threads,
// "<key>/<node>@<step>" — share a store id.
func ThreadKey(tenant, id string) string {
	if tenant == "" {
		return id
	}
	return "/" + tenant + "/" + id
}

// SplitThread returns the tenant whose id space the store id key is in and
// the id the tenant knows the thread by (a child thread's with its
// "/<node>@<step>" suffix); ok is false for a key that names no thread
// ("", "/acme").
func SplitThread(key string) (tenant, id string, ok bool) {
	rest, named := strings.CutPrefix(key, "/")
	if !named {
		return "", key, key != ""
	}
	tenant, id, ok = strings.Cut(rest, "/")
	return tenant, id, ok && tenant != "" && id != ""
}

// ThreadID is the id a tenant knows the thread stored as key by: key
// without its tenant's prefix (SplitThread).
func ThreadID(key string) string {
	if _, id, ok := SplitThread(key); ok {
		return id
	}
	return key
}

// Root is the store id of the root thread of the thread stored as key:
// key itself for a root thread, "<root>" for a child thread
// "<root>/<node>@<step>" (and a child's child).
func Root(key string) string {
	tenant, id, ok := SplitThread(key)
	if !ok {
		return key
	}
	first, _, _ := strings.Cut(id, "/")
	return ThreadKey(tenant, first)
}

// CheckThreadID checks an id a client picks for a thread: not empty, and
// without "/", which separates a tenant from its threads and a thread from
// its child threads.
func CheckThreadID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("a thread id is empty")
	case strings.Contains(id, "/"):
		return fmt.Errorf("thread id %q contains \"/\", which separates a thread from its child threads: pick an id without it", id)
	}
	return nil
}

// ParseThread reads a thread named on the command line: "/tenant/id", as
// `runner threads list` prints it, or an id of tenant (ThreadKey). It
// returns the thread's store id and its tenant.
func ParseThread(tenant, arg string) (key, owner string, err error) {
	if !strings.HasPrefix(arg, "/") {
		return ThreadKey(tenant, arg), tenant, nil
	}
	owner, id, ok := SplitThread(arg)
	switch {
	case !ok:
		return "", "", fmt.Errorf("thread %q names no thread: write /TENANT/ID, or ID with --tenant TENANT", arg)
	case tenant != "" && owner != tenant:
		return "", "", fmt.Errorf("thread %q is tenant %s's, not %s's: drop --tenant, or name the thread %s", arg, owner, tenant, id)
	}
	return arg, owner, nil
}

var (
	namePattern      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	principalPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@+-]*$`)
)

// CheckTenant checks a tenant's name: letters, digits, '.', '_' and '-',
// beginning with a letter or digit ("" is the default tenant).
func CheckTenant(name string) error {
	if name != "" && !namePattern.MatchString(name) {
		return fmt.Errorf("tenant %q: a tenant's name is letters, digits, '.', '_' and '-', beginning with a letter or digit", name)
	}
	return nil
}

// checkPrincipal checks a principal's name: a tenant's characters, '@'
// and '+' too (alice, alice@acme.com).
func checkPrincipal(name string) error {
	if !principalPattern.MatchString(name) {
		return fmt.Errorf("principal %q: a principal's name is letters, digits, '.', '_', '-', '@' and '+', beginning with a letter or digit", name)
	}
	return nil
}

// checkRole checks a role's name: a tenant's characters.
func checkRole(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("role %q: a role's name is letters, digits, '.', '_' and '-', beginning with a letter or digit", name)
	}
	return nil
}
