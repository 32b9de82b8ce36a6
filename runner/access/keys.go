package access

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Keys maps the hex SHA-256 of each API key (HashKey) to the principal
// the key identifies.
type Keys map[string]Principal

// HashKey is the form an API key is configured in: its hex SHA-256.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Lookup returns the principal of an API key; false for an empty or an
// unknown key. Keys are found by their hash: what the lookup's time could
// tell is about the hash of the key presented, which says nothing of the
// keys configured.
func (k Keys) Lookup(key string) (Principal, bool) {
	if key == "" {
		return Principal{}, false
	}
	p, ok := k[HashKey(key)]
	return p, ok
}

// NewKey returns a fresh random API key: "rk_" and 32 random bytes in
// base64url.
func NewKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "rk_" + base64.RawURLEncoding.EncodeToString(b)
}

// Line is the keys file's line of the key whose hash is hash for p: the
// plain form "<hash>: acme" for a named tenant's key with no principal,
// else "<hash>: {tenant: acme, principal: alice, roles: [ops-lead]}" with
// what p has (no tenant: the default tenant).
func Line(hash string, p Principal) string {
	if p.Tenant != "" && p.Name == "" && len(p.Roles) == 0 {
		return hash + ": " + p.Tenant
	}
	var fields []string
	if p.Tenant != "" {
		fields = append(fields, "tenant: "+p.Tenant)
	}
	if p.Name != "" {
		fields = append(fields, "principal: "+p.Name)
	}
	if len(p.Roles) > 0 {
		fields = append(fields, "roles: ["+strings.Join(p.Roles, ", ")+"]")
	}
	return hash + ": {" + strings.Join(fields, ", ") + "}"
}

// ParseKeys reads a keys file named name: a YAML mapping of key hashes to
// principals, each in the plain form "<sha256>: acme" (a tenant's key) or
// "<sha256>: {tenant: acme, principal: alice, roles: [ops-lead]}" (a
// principal with roles; no tenant: the default tenant). A hash may be
// pasted as sha256sum prints it ("<sha256>  -"). An empty file has no
// keys. Every bad entry is an error at its file:line:col saying what to
// write.
func ParseKeys(name string, data []byte) (Keys, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w; want a mapping of key hashes to tenants, one a line: <sha256>: acme", name, err)
	}
	if len(doc.Content) == 0 {
		return Keys{}, nil
	}
	return KeysOf(name, doc.Content[0])
}

// KeysOf reads the keys of n, a mapping node of the file name in the form
// ParseKeys reads (runner.yaml's serve.api_keys).
func KeysOf(name string, n *yaml.Node) (Keys, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return Keys{}, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, keyErr(name, n, "want a mapping of key hashes to tenants, one a line: <sha256>: acme")
	}
	keys, lines := Keys{}, map[string]int{}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		hash, ok := keyHash(k.Value)
		if !ok {
			errs = append(errs, keyErr(name, k, "%q is not the SHA-256 of a key: write the key's hex SHA-256 (printf %%s \"$KEY\" | sha256sum), or make a key and its line with runner keys new", k.Value))
			continue
		}
		if line, dup := lines[hash]; dup {
			errs = append(errs, keyErr(name, k, "this key is configured already, at line %d: keep one of the two lines", line))
			continue
		}
		p, err := principalOf(name, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keys[hash], lines[hash] = p, k.Line
	}
	return keys, errors.Join(errs...)
}

var sha256Hex = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// keyHash reads a key's hash, alone or as sha256sum prints it ("<hash>  -").
func keyHash(s string) (string, bool) {
	f := strings.Fields(s)
	if len(f) == 2 && (f[1] == "-" || f[1] == "*-") {
		f = f[:1]
	}
	if len(f) != 1 || !sha256Hex.MatchString(f[0]) {
		return "", false
	}
	return strings.ToLower(f[0]), true
}

// keyForms says what a key's principal is written as.
const keyForms = "write a tenant (acme) or {tenant: acme, principal: alice, roles: [ops-lead]}"

// principalOf reads the principal of a key: a tenant's name, or a mapping
// of tenant, principal and roles.
func principalOf(name string, v *yaml.Node) (Principal, error) {
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag != "!!null" && v.Value != "":
		if err := CheckTenant(v.Value); err != nil {
			return Principal{}, keyErr(name, v, "%v", err)
		}
		return Principal{Tenant: v.Value}, nil
	case v.Kind != yaml.MappingNode:
		return Principal{}, keyErr(name, v, "no principal for this key: %s", keyForms)
	}
	var p Principal
	var errs []error
	for i := 0; i+1 < len(v.Content); i += 2 {
		f, val := v.Content[i], v.Content[i+1]
		var err error
		switch f.Value {
		case "tenant":
			if p.Tenant, err = scalar(val); err == nil {
				err = CheckTenant(p.Tenant)
			}
		case "principal":
			if p.Name, err = scalar(val); err == nil {
				err = checkPrincipal(p.Name)
			}
		case "roles":
			p.Roles, err = roles(val)
		default:
			err = fmt.Errorf("unknown field %q%s: %s", f.Value, didYouMean(f.Value), keyForms)
			val = f
		}
		if err != nil {
			errs = append(errs, keyErr(name, val, "%v", err))
		}
	}
	return p, errors.Join(errs...)
}

// scalar is the string of a scalar node.
func scalar(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", errors.New("want a name here")
	}
	return n.Value, nil
}

// roles reads a list of role names.
func roles(n *yaml.Node) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, errors.New("roles is a list: roles: [ops-lead]")
	}
	out := make([]string, 0, len(n.Content))
	for _, r := range n.Content {
		role, err := scalar(r)
		if err == nil {
			err = checkRole(role)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, role)
	}
	return out, nil
}

// didYouMean names the field meant by a likely slip of a key's fields.
func didYouMean(field string) string {
	meant := map[string]string{"role": "roles", "name": "principal", "user": "principal", "tenant_id": "tenant"}[field]
	if meant == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", meant)
}

// keyErr is an error at n's position in file name.
func keyErr(name string, n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d:%d: %s", name, n.Line, n.Column, fmt.Sprintf(format, args...))
}
