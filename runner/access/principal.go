// Package access decides who may do what, for the server and the CLI
// alike: the Principal a request or a command acts as (a tenant, a name
// within it, roles), the keys file that maps API keys to principals
// (ParseKeys), the bearer tokens of an OIDC issuer that name principals
// too (Tokens), the store ids of a tenant's threads (ThreadKey), and the
// one decision whether a principal may use a thread (Authorize).
//
// Tenants are isolated by their thread ids: each tenant has an id space of
// its own, so a thread id another tenant uses names, for this one, a thread
// that does not exist yet — it looks unknown for every verb, and creating
// it creates this tenant's own thread.
//
// Errors: ParseKeys returns every bad entry of a keys file, each at its
// file:line:col with what to write instead; Authorize returns ErrHidden;
// Tokens.Principal returns errors wrapping ErrToken (a refused token) or
// ErrIssuerUnavailable (an issuer that cannot be read now).
package access

import (
	"context"
	"errors"
	"slices"
)

// Principal is who a request or a command acts as: a tenant ("" is the
// default tenant: the one of `runner exec` without --tenant and of
// `runner serve --no-auth`), the principal's name within it ("" for a key
// of the keys file's plain form, which names a tenant alone), and its
// roles. A principal sees the threads, runs and streams of its tenant and
// of no other; roles are what rules that name them (reviewers, auditors)
// check.
type Principal struct {
	Tenant string   `json:"tenant,omitempty"`
	Name   string   `json:"principal,omitempty"`
	Roles  []string `json:"roles,omitempty"`
}

// Local is the principal of the local user: the default tenant, named
// "local", with no roles (`runner serve --no-auth` serves every request as
// it).
func Local() Principal { return Principal{Name: "local"} }

// Check checks p's names: its tenant's (CheckTenant), its own and its
// roles'.
func (p Principal) Check() error {
	err := CheckTenant(p.Tenant)
	if err == nil && p.Name != "" {
		err = checkPrincipal(p.Name)
	}
	for _, r := range p.Roles {
		if err == nil {
			err = checkRole(r)
		}
	}
	return err
}

// HasRole reports whether p has role.
func (p Principal) HasRole(role string) bool { return slices.Contains(p.Roles, role) }

// Sees reports whether p may see what is tenant's, or every tenant's when
// tenant is "" (a project's Test documents, say).
func (p Principal) Sees(tenant string) bool { return tenant == "" || tenant == p.Tenant }

// ErrHidden is Authorize's refusal: the thread is not the principal's to
// use, and the caller answers exactly as it does for an unknown thread.
var ErrHidden = errors.New("no such thread")

// Authorize is the one decision whether p may use — see, run, write,
// delete or stream — the thread stored under key whose record names the
// tenant owner: only a root thread of p's own tenant, in p's tenant's id
// space (child threads are used through their root). Otherwise ErrHidden.
func Authorize(p Principal, key, owner string) error {
	tenant, id, ok := SplitThread(key)
	if !ok || tenant != p.Tenant || owner != p.Tenant || CheckThreadID(id) != nil {
		return ErrHidden
	}
	return nil
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal ctx carries; without one, the zero
// Principal (the default tenant, unnamed) and false.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
