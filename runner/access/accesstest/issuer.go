// Package accesstest is an OpenID Connect issuer for tests: a real HTTP
// server (httptest) serving a discovery document and a JWKS, and tokens
// signed with its keys by go-jose, so tests verify bearer tokens as a
// deployment does.
package accesstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Audience is the audience of the tokens Claims makes.
const Audience = "runner-api"

// Issuer is a running issuer: its URL, its signing keys by key id, and
// how often its JWKS was read.
type Issuer struct {
	URL string
	// KeyReads counts the reads of the JWKS.
	KeyReads atomic.Int32

	srv  *httptest.Server
	mu   sync.Mutex
	keys map[string]signingKey // by key id
	kids []string              // in the order published
}

// signingKey is a private key and its algorithm.
type signingKey struct {
	key crypto.Signer
	alg jose.SignatureAlgorithm
}

// NewIssuer starts an issuer with the keys "rsa-1" (RS256) and "ec-1"
// (ES256); it stops when t ends.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	i := &Issuer{keys: map[string]signingKey{}}
	i.srv = httptest.NewServer(http.HandlerFunc(i.serve))
	t.Cleanup(i.srv.Close)
	i.URL = i.srv.URL
	i.AddKey(t, "rsa-1", jose.RS256)
	i.AddKey(t, "ec-1", jose.ES256)
	return i
}

// Close stops the issuer: it can no longer be reached.
func (i *Issuer) Close() { i.srv.Close() }

// AddKey makes a key of alg (RS256 or ES256) and publishes it under kid,
// as an issuer rotating its keys does.
func (i *Issuer) AddKey(t testing.TB, kid string, alg jose.SignatureAlgorithm) {
	t.Helper()
	var key crypto.Signer
	var err error
	if alg == jose.ES256 {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys[kid] = signingKey{key: key, alg: alg}
	i.kids = append(i.kids, kid)
}

// Claims are a token's claims for principal sub of tenant with roles,
// issued by i for Audience, valid for an hour.
func (i *Issuer) Claims(sub, tenant string, roles ...string) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": i.URL, "aud": Audience, "sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if tenant != "" {
		c["tenant"] = tenant
	}
	if roles != nil {
		c["roles"] = roles
	}
	return c
}

// Token signs claims with the key kid.
func (i *Issuer) Token(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	i.mu.Lock()
	k, ok := i.keys[kid]
	i.mu.Unlock()
	if !ok {
		t.Fatalf("issuer has no key %q", kid)
	}
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: k.key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// serve answers the discovery document and the JWKS.
func (i *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": i.URL, "jwks_uri": i.URL + "/jwks", "authorization_endpoint": i.URL + "/authorize",
			"token_endpoint": i.URL + "/token", "id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
			"response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
		})
	case "/jwks":
		i.KeyReads.Add(1)
		i.mu.Lock()
		var set jose.JSONWebKeySet
		for _, kid := range i.kids {
			k := i.keys[kid]
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.key.Public(), KeyID: kid, Algorithm: string(k.alg), Use: "sig"})
		}
		i.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	default:
		http.NotFound(w, r)
	}
}
