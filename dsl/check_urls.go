package dsl

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// HostError is a request to a host that an http tool's allow_hosts does
// not name.
type HostError struct {
	Host  string
	Allow []string
}

func (e *HostError) Error() string {
	return fmt.Sprintf("host %q is not in allow_hosts [%s]", e.Host, strings.Join(e.Allow, ", "))
}

// CheckURL refuses a URL that is not http or https, or whose host
// allow_hosts does not name: an entry names a host (any port) or a
// host:port (the scheme's port when the URL has none). The http tool
// checks every request and redirect with it, and the checker the literal
// start of url:.
func (h *HTTPDef) CheckURL(u *url.URL) error {
	if err := checkScheme(u.Scheme); err != nil {
		return err
	}
	if !h.allows(u) {
		return &HostError{Host: u.Host, Allow: h.AllowHosts}
	}
	return nil
}

func checkScheme(scheme string) error {
	if scheme != "http" && scheme != "https" {
		return fmt.Errorf("url scheme must be http or https, not %q", scheme)
	}
	return nil
}

func (h *HTTPDef) allows(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	hostPort := net.JoinHostPort(u.Hostname(), port)
	for _, a := range h.AllowHosts {
		if strings.EqualFold(a, u.Hostname()) || strings.EqualFold(a, hostPort) {
			return true
		}
	}
	return false
}

// httpURL checks what the literal start of an http tool's url: tells:
// its scheme, and its host unless an expression computes it.
func (k *check) httpURL(d *Document, n *yaml.Node, def *HTTPDef) {
	if n == nil || def.URL == nil {
		return
	}
	literal, whole := literalStart(n.Value)
	src := source(d, n, Expr)
	scheme, rest, known := splitScheme(literal, whole)
	if !known {
		return
	}
	if err := checkScheme(strings.ToLower(scheme)); err != nil {
		k.diags.Errorf(src.PosAt(0), CodeURL, "url: %v", err).Hint = "start the URL with https:// or http://"
		return
	}
	host, ok := literalHost(rest, whole)
	if !ok {
		return
	}
	at := src.PosAt(len(scheme) + 3)
	u, err := url.Parse(scheme + "://" + host)
	if err == nil {
		err = def.CheckURL(u)
	}
	if err != nil {
		k.diags.Errorf(at, CodeURL, "url: %v", err).Hint = "add the host to allow_hosts, or call a host it names"
	}
}

// literalStart returns a URL template's text up to its first ${ (a $ has
// no place in a scheme or host), and whether that is all of it.
func literalStart(url string) (string, bool) {
	if i := strings.IndexByte(url, '$'); i >= 0 {
		return url[:i], false
	}
	return url, true
}

// splitScheme splits the literal start of a URL into its scheme and the
// rest. known is false when an expression may still write the scheme;
// a literal start with no scheme gives "".
func splitScheme(literal string, whole bool) (scheme, rest string, known bool) {
	for i, c := range literal {
		switch {
		case c == ':':
			return literal[:i], literal[i+1:], true
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", literal, true // no scheme has this character
		}
	}
	if whole {
		return "", literal, true
	}
	return "", "", false
}

// literalHost returns the authority (host, port, user) of the part of a
// URL after its scheme's colon, when it is all literal.
func literalHost(rest string, whole bool) (string, bool) {
	after, ok := strings.CutPrefix(rest, "//")
	if !ok {
		return "", false
	}
	if end := strings.IndexAny(after, "/?#"); end >= 0 {
		return after[:end], true
	}
	return after, whole
}

// baseURL checks a Model's base_url: an absolute http or https URL.
func (k *check) baseURL(d *Document, n *yaml.Node) {
	if n == nil || k.bad(n) {
		return
	}
	u, err := url.Parse(n.Value)
	if err == nil && checkScheme(u.Scheme) == nil && u.Host != "" {
		return
	}
	k.diags.Errorf(d.Pos(n), CodeURL, "base_url %q is not an http or https URL", n.Value).Hint =
		"write it with its scheme and host, e.g. http://localhost:11434/v1"
}
