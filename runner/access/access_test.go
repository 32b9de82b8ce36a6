package access_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner/access"
)

var (
	hashA = access.HashKey("key-a")
	hashB = access.HashKey("key-b")
)

func TestParseKeys(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       access.Keys
	}{
		{"empty file", "", access.Keys{}},
		{"plain form", hashA + ": acme\n", access.Keys{hashA: {Tenant: "acme"}}},
		{"principal with roles", hashA + ": {tenant: acme, principal: alice@acme.com, roles: [ops-lead, cfo]}\n",
			access.Keys{hashA: {Tenant: "acme", Name: "alice@acme.com", Roles: []string{"ops-lead", "cfo"}}}},
		{"block mapping, no tenant: the default tenant", hashA + ":\n  principal: bob\n",
			access.Keys{hashA: {Name: "bob"}}},
		{"pasted from sha256sum", hashA + "  -: acme\n" + strings.ToUpper(hashB) + " *-: other\n",
			access.Keys{hashA: {Tenant: "acme"}, hashB: {Tenant: "other"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := access.ParseKeys("keys.yaml", []byte(tc.file))
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseKeys = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestParseKeysErrors: every bad entry is reported at its line with what
// to write.
func TestParseKeysErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"a key as itself", "sk-live-123: acme\n", []string{`keys.yaml:1:1: "sk-live-123" is not the SHA-256 of a key`, "sha256sum", "runner keys new"}},
		{"no principal", hashA + ":\n", []string{"keys.yaml:1:66: no principal for this key: write a tenant (acme) or {tenant: acme"}},
		{"a slip of a field", hashA + ": {tenant: acme, role: [x]}\n", []string{`keys.yaml:1:82: unknown field "role" (did you mean "roles"?)`}},
		{"roles not a list", hashA + ": {tenant: acme, roles: ops}\n", []string{"keys.yaml:1:89: roles is a list: roles: [ops-lead]"}},
		{"a tenant with a slash", hashA + ": acme/eu\n", []string{`keys.yaml:1:67: tenant "acme/eu": a tenant's name is letters`}},
		{"one key twice", hashA + ": acme\n" + hashA + "  -: other\n", []string{"keys.yaml:2:1: this key is configured already, at line 1"}},
		{"not a mapping", "- " + hashA + "\n", []string{"keys.yaml:1:1: want a mapping of key hashes to tenants"}},
		{"every bad entry", "x: acme\n" + hashA + ": {principal: 'a b'}\n", []string{"keys.yaml:1:1:", `keys.yaml:2:79: principal "a b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := access.ParseKeys("keys.yaml", []byte(tc.file))
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("ParseKeys error = %v; want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestLineParses: the line runner keys new prints reads back as the
// principal it was made for.
func TestLineParses(t *testing.T) {
	for _, p := range []access.Principal{{Tenant: "acme"}, {Tenant: "acme", Name: "alice", Roles: []string{"ops-lead", "cfo"}}, {Name: "bob"}, {}} {
		key := access.NewKey()
		line := access.Line(access.HashKey(key), p)
		keys, err := access.ParseKeys("keys.yaml", []byte(line+"\n"))
		if got, ok := keys.Lookup(key); err != nil || !ok || !reflect.DeepEqual(got, p) {
			t.Errorf("line %q reads as %v, %v, %v; want %v", line, got, ok, err, p)
		}
	}
	if a, b := access.NewKey(), access.NewKey(); a == b || !strings.HasPrefix(a, "rk_") || len(a) != 46 {
		t.Errorf("NewKey = %q, %q", a, b)
	}
}

func TestLookup(t *testing.T) {
	keys := access.Keys{hashA: {Tenant: "acme"}, access.HashKey(""): {Tenant: "empty"}}
	if p, ok := keys.Lookup("key-a"); !ok || p.Tenant != "acme" {
		t.Errorf("Lookup(key-a) = %v, %v", p, ok)
	}
	for _, k := range []string{"", "key-b", hashA} {
		if p, ok := keys.Lookup(k); ok {
			t.Errorf("Lookup(%q) = %v, want none", k, p)
		}
	}
}

func TestThreadKeys(t *testing.T) {
	for _, tc := range []struct{ tenant, id, key string }{
		{"", "conv-1", "conv-1"},
		{"acme", "conv-1", "/acme/conv-1"},
		{"acme", "conv-1/sub@3", "/acme/conv-1/sub@3"},
	} {
		key := access.ThreadKey(tc.tenant, tc.id)
		tenant, id, ok := access.SplitThread(key)
		if key != tc.key || tenant != tc.tenant || id != tc.id || !ok || access.ThreadID(key) != tc.id {
			t.Errorf("ThreadKey(%q, %q) = %q, split %q %q %v; want %q", tc.tenant, tc.id, key, tenant, id, ok, tc.key)
		}
	}
	for key, root := range map[string]string{"t": "t", "t/sub@1/x@2": "t", "/acme/t": "/acme/t", "/acme/t/sub@1/x@2": "/acme/t"} {
		if got := access.Root(key); got != root {
			t.Errorf("Root(%q) = %q, want %q", key, got, root)
		}
	}
	for _, key := range []string{"", "/", "/acme", "/acme/", "//x"} {
		if tenant, id, ok := access.SplitThread(key); ok {
			t.Errorf("SplitThread(%q) = %q, %q; want no thread", key, tenant, id)
		}
	}
}

// TestAuthorize: a principal may use the root threads of its own tenant,
// recorded as its own, and nothing else.
func TestAuthorize(t *testing.T) {
	acme, def := access.Principal{Tenant: "acme", Name: "alice"}, access.Local()
	for _, tc := range []struct {
		name       string
		p          access.Principal
		key, owner string
		ok         bool
	}{
		{"its own thread", acme, "/acme/t", "acme", true},
		{"the default tenant's own", def, "t", "", true},
		{"another tenant's id space", acme, "/other/t", "acme", false},
		{"a record of another tenant", acme, "/acme/t", "other", false},
		{"a default tenant's thread", acme, "t", "", false},
		{"a named tenant's thread, for the default tenant", def, "/acme/t", "", false},
		{"a child thread", acme, "/acme/t/sub@1", "acme", false},
		{"a default tenant's child thread", def, "t/sub@1", "", false},
	} {
		if err := access.Authorize(tc.p, tc.key, tc.owner); (err == nil) != tc.ok {
			t.Errorf("%s: Authorize = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestSees(t *testing.T) {
	acme := access.Principal{Tenant: "acme"}
	if !acme.Sees("") || !acme.Sees("acme") || acme.Sees("other") || access.Local().Sees("acme") {
		t.Error("a principal sees its tenant's and every tenant's, nothing else")
	}
}

func TestParseThread(t *testing.T) {
	for _, tc := range []struct{ tenant, arg, key, owner, err string }{
		{"", "t", "t", "", ""},
		{"acme", "t", "/acme/t", "acme", ""},
		{"", "/acme/t", "/acme/t", "acme", ""},
		{"acme", "/acme/t", "/acme/t", "acme", ""},
		{"other", "/acme/t", "", "", "is tenant acme's, not other's"},
		{"", "/acme", "", "", "names no thread"},
	} {
		key, owner, err := access.ParseThread(tc.tenant, tc.arg)
		if key != tc.key || owner != tc.owner || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseThread(%q, %q) = %q, %q, %v; want %q, %q, %q", tc.tenant, tc.arg, key, owner, err, tc.key, tc.owner, tc.err)
		}
	}
}

// TestMayDecide: a principal decides a held call only when it is among
// the reviewers, is not the requester the rule keeps apart, has not
// decided it already, and has a name where decisions are told apart; a
// principal of another tenant decides nothing.
func TestMayDecide(t *testing.T) {
	alice := access.Principal{Tenant: "acme", Name: "alice", Roles: []string{"ops-lead"}}
	cfo := access.Principal{Tenant: "acme", Name: "carol", Roles: []string{"cfo"}}
	unnamed := access.Principal{Tenant: "acme", Roles: []string{"ops-lead"}}
	byRole := access.Reviewers{Roles: []string{"ops-lead"}}
	for _, tc := range []struct {
		name string
		p    access.Principal
		b    access.Ballot
		want string // "" allowed
	}{
		{"anyone of the tenant", unnamed, access.Ballot{Tenant: "acme"}, ""},
		{"by role", alice, access.Ballot{Tenant: "acme", Reviewers: byRole}, ""},
		{"by name", cfo, access.Ballot{Tenant: "acme", Reviewers: access.Reviewers{Principals: []string{"carol"}}}, ""},
		{"without the role", cfo, access.Ballot{Tenant: "acme", Reviewers: byRole}, "carol (roles cfo) is not among its reviewers (roles ops-lead)"},
		{"the requester", alice, access.Ballot{Tenant: "acme", Reviewers: byRole, Requester: "alice", DistinctFromRequester: true}, "alice started the run"},
		{"the requester, not kept apart", alice, access.Ballot{Tenant: "acme", Reviewers: byRole, Requester: "alice"}, ""},
		{"a second vote", alice, access.Ballot{Tenant: "acme", Reviewers: byRole, Quorum: 2, Voted: []string{"alice"}}, "alice has decided it already; it needs 2 distinct principals"},
		{"a quorum, unnamed", unnamed, access.Ballot{Tenant: "acme", Reviewers: byRole, Quorum: 2}, "the key names none"},
		{"kept from the requester, unnamed", unnamed, access.Ballot{Tenant: "acme", DistinctFromRequester: true}, "the key names none"},
		{"another tenant's", access.Principal{Tenant: "other", Name: "carol", Roles: []string{"cfo"}}, access.Ballot{Tenant: "acme"},
			"carol (roles cfo) is a principal of tenant other; the approval is tenant acme's"},
		{"the default tenant's", cfo, access.Ballot{}, "the approval is tenant default's"},
	} {
		err := access.MayDecide(tc.p, tc.b)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: MayDecide = %v, want allowed", tc.name, err)
		case tc.want != "" && (!errors.Is(err, access.ErrForbidden) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: MayDecide = %v, want ErrForbidden saying %q", tc.name, err, tc.want)
		}
	}
}

// TestReviewerKeys: an approval's index keys meet a principal's exactly
// where the principal is among its reviewers.
func TestReviewerKeys(t *testing.T) {
	r := access.Reviewers{Roles: []string{"cfo"}, Principals: []string{"bob"}}
	for _, tc := range []struct {
		p    access.Principal
		meet bool
	}{
		{access.Principal{Name: "alice", Roles: []string{"cfo"}}, true},
		{access.Principal{Name: "bob"}, true},
		{access.Principal{Name: "alice", Roles: []string{"ops"}}, false},
	} {
		meet := false
		for _, k := range tc.p.ReviewerKeys() {
			meet = meet || slices.Contains(r.Keys(), k)
		}
		if meet != tc.meet || meet != r.Admits(tc.p) {
			t.Errorf("%v: keys meet %v, Admits %v; want %v", tc.p, meet, r.Admits(tc.p), tc.meet)
		}
	}
	if !slices.Equal(access.Reviewers{}.Keys(), []string{"*"}) {
		t.Errorf("open reviewers' keys = %v", access.Reviewers{}.Keys())
	}
}

// TestParseReviewers: a rule's reviewers are "role:NAME" and
// "principal:NAME"; any other entry is refused, naming it.
func TestParseReviewers(t *testing.T) {
	r, err := access.ParseReviewers([]string{"role:cfo", "principal:alice", "role:ops-lead"})
	if err != nil || !slices.Equal(r.Roles, []string{"cfo", "ops-lead"}) || !slices.Equal(r.Principals, []string{"alice"}) {
		t.Fatalf("ParseReviewers = %+v, %v", r, err)
	}
	for _, bad := range []string{"cfo", "group:x", "role:", "principal:-x"} {
		if _, err := access.ParseReviewers([]string{bad}); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(strings.TrimPrefix(bad, "role:"), "principal:")) {
			t.Errorf("ParseReviewers(%q) = %v, want an error naming it", bad, err)
		}
	}
}
