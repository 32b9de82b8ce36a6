package dsl

import "testing"

// TestLiteralURL pins what the literal start of a templated url: tells
// about its scheme and host, and what it leaves to the run.
func TestLiteralURL(t *testing.T) {
	cases := []struct {
		url, scheme, host string
		schemeKnown       bool
		hostKnown         bool
	}{
		{url: "https://api.example.com/v1/${args.id}", scheme: "https", host: "api.example.com", schemeKnown: true, hostKnown: true},
		{url: "https://api.example.com:8443", scheme: "https", host: "api.example.com:8443", schemeKnown: true, hostKnown: true},
		{url: "http://user@h.example?q=${args.q}", scheme: "http", host: "user@h.example", schemeKnown: true, hostKnown: true},
		{url: "https://${args.host}/v1", scheme: "https", schemeKnown: true},
		{url: "https://api.${args.region}.example.com/", scheme: "https", schemeKnown: true},
		{url: "${secrets.base}/v1"},
		{url: "http${args.s}://x"},
		{url: "ftp://files.example.com/${args.f}", scheme: "ftp", host: "files.example.com", schemeKnown: true, hostKnown: true},
		{url: "api.example.com/${args.id}", schemeKnown: true},
		{url: "localhost", schemeKnown: true},
		{url: "localhost:8080/x", scheme: "localhost", schemeKnown: true},
		{url: "8080:x", schemeKnown: true},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			literal, whole := literalStart(c.url)
			scheme, rest, known := splitScheme(literal, whole)
			if scheme != c.scheme || known != c.schemeKnown {
				t.Fatalf("scheme = %q, %v; want %q, %v", scheme, known, c.scheme, c.schemeKnown)
			}
			host, ok := literalHost(rest, whole)
			if !known {
				ok = false
			}
			if host != c.host && ok || ok != c.hostKnown {
				t.Errorf("host = %q, %v; want %q, %v", host, ok, c.host, c.hostKnown)
			}
		})
	}
}
