package access

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Reviewers are who may decide an approval: the principals with one of
// Roles and those Principals names. With neither, every principal of the
// thread's tenant may.
type Reviewers struct {
	Roles      []string `json:"roles,omitempty"`
	Principals []string `json:"principals,omitempty"`
}

// Open reports whether r names no one: every principal of the tenant may
// decide.
func (r Reviewers) Open() bool { return len(r.Roles) == 0 && len(r.Principals) == 0 }

// Admits reports whether r names p: by one of its roles or by its name.
func (r Reviewers) Admits(p Principal) bool {
	if r.Open() {
		return true
	}
	for _, role := range p.Roles {
		if slices.Contains(r.Roles, role) {
			return true
		}
	}
	return p.Name != "" && slices.Contains(r.Principals, p.Name)
}

// Keys are r's reviewers as the keys an index of approvals keeps ("role:
// cfo", "principal:alice"; "*" for every principal of the tenant); a
// principal's own keys (Principal.ReviewerKeys) meet them where it may
// decide.
func (r Reviewers) Keys() []string {
	if r.Open() {
		return []string{anyone}
	}
	keys := make([]string, 0, len(r.Roles)+len(r.Principals))
	for _, role := range r.Roles {
		keys = append(keys, "role:"+role)
	}
	for _, name := range r.Principals {
		keys = append(keys, "principal:"+name)
	}
	return keys
}

// anyone is the index key of approvals every principal of a tenant may
// decide.
const anyone = "*"

// ReviewerKeys are the index keys (Reviewers.Keys) of the approvals p
// may be among the reviewers of: every principal's ("*"), its roles' and
// its name's.
func (p Principal) ReviewerKeys() []string {
	keys := []string{anyone}
	for _, role := range p.Roles {
		keys = append(keys, "role:"+role)
	}
	if p.Name != "" {
		keys = append(keys, "principal:"+p.Name)
	}
	return keys
}

// String names p for messages: its name, else its tenant's key, with its
// roles.
func (p Principal) String() string {
	name := p.Name
	if name == "" {
		name = "an unnamed key of tenant " + or(p.Tenant, "default")
	}
	if len(p.Roles) == 0 {
		return name
	}
	return name + " (roles " + strings.Join(p.Roles, ", ") + ")"
}

// Ballot is one held call of an approval as a decision on it is
// checked: whose tenant's thread holds it, who may decide it, how many
// distinct principals must agree, who started the run and whether they
// are kept from deciding, and who has approved it already.
type Ballot struct {
	Tenant    string    `json:"tenant,omitempty"`
	Reviewers Reviewers `json:"reviewers"`
	// Quorum is how many distinct principals must approve (0 or 1: one).
	Quorum int `json:"quorum,omitempty"`
	// Requester is the name of the principal who started the run;
	// DistinctFromRequester keeps them from deciding.
	Requester             string `json:"requester,omitempty"`
	DistinctFromRequester bool   `json:"distinct_from_requester,omitempty"`
	// Voted are the principals who have approved the call already.
	Voted []string `json:"approved_by,omitempty"`
}

// ErrForbidden is MayDecide's refusal: the principal may not decide the
// approval. Nothing changes; a server answers 403, the CLI exits 2.
var ErrForbidden = errors.New("not allowed to decide this approval")

// MayDecide is the one decision whether p may decide the held call b
// describes: p must be of its tenant, among its reviewers, not the requester when the
// rule keeps them apart, and not have decided it already; a decision that
// must be told from others' (a quorum, a requester kept apart) needs a
// named principal. The error wraps ErrForbidden and says why and who may.
func MayDecide(p Principal, b Ballot) error {
	switch {
	case p.Tenant != b.Tenant:
		return forbidden("%s is a principal of tenant %s; the approval is tenant %s's", p, or(p.Tenant, "default"), or(b.Tenant, "default"))
	case !b.Reviewers.Admits(p):
		return forbidden("%s is not among its reviewers (%s)", p, b.Reviewers)
	case p.Name == "" && (b.Quorum > 1 || b.DistinctFromRequester):
		return forbidden("its decisions are told apart by principal, and the key names none: give it a principal in the keys file")
	case b.DistinctFromRequester && p.Name == b.Requester:
		return forbidden("%s started the run, and the rule asks for a reviewer other than the requester", p.Name)
	case p.Name != "" && slices.Contains(b.Voted, p.Name):
		return forbidden("%s has decided it already; it needs %d distinct principals", p.Name, max(b.Quorum, 1))
	}
	return nil
}

// ParseReviewers reads a rule's reviewers: entries "role:NAME" and
// "principal:NAME". An entry of another form is an error that says which.
func ParseReviewers(entries []string) (Reviewers, error) {
	var r Reviewers
	for _, e := range entries {
		var err error
		switch kind, name, _ := strings.Cut(e, ":"); kind {
		case "role":
			err, r.Roles = checkRole(name), append(r.Roles, name)
		case "principal":
			err, r.Principals = checkPrincipal(name), append(r.Principals, name)
		default:
			err = fmt.Errorf(`reviewer %q: write "role:NAME" or "principal:NAME"`, e)
		}
		if err != nil {
			return Reviewers{}, err
		}
	}
	return r, nil
}

// String lists r's roles and principals ("anyone of the tenant" for
// none).
func (r Reviewers) String() string {
	if r.Open() {
		return "anyone of the tenant"
	}
	var parts []string
	if len(r.Roles) > 0 {
		parts = append(parts, "roles "+strings.Join(r.Roles, ", "))
	}
	if len(r.Principals) > 0 {
		parts = append(parts, "principals "+strings.Join(r.Principals, ", "))
	}
	return strings.Join(parts, "; ")
}

// forbidden is an error wrapping ErrForbidden.
func forbidden(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrForbidden, fmt.Sprintf(format, args...))
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// Auditor is the role that may read its tenant's audit ledger.
const Auditor = "auditor"

// ErrNotAuditor is MayAudit's refusal: a server answers 403.
var ErrNotAuditor = errors.New("not an auditor")

// MayAudit is the one decision whether p may read the audit ledger of
// its tenant: p must have the role Auditor.
func MayAudit(p Principal) error {
	if !p.HasRole(Auditor) {
		return fmt.Errorf("%w: %s has not the role %q; give the key that role in the keys file", ErrNotAuditor, p, Auditor)
	}
	return nil
}
