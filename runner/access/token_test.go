package access_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/access/accesstest"
)

// tokens is the verifier of iss's tokens for accesstest.Audience, with
// what tweak changes.
func tokens(t *testing.T, iss *accesstest.Issuer, tweak ...func(*access.OIDC)) *access.Tokens {
	t.Helper()
	cfg := access.OIDC{Issuer: iss.URL, Audience: accesstest.Audience}
	for _, f := range tweak {
		f(&cfg)
	}
	v, err := access.NewTokens(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestTokenPrincipal verifies tokens of a real issuer (discovery and
// JWKS over HTTP) signed RS256 and ES256: each names the principal of its
// claims; a token signed with a key published after the keys were read
// (a rotation) is verified after one more read of the JWKS.
func TestTokenPrincipal(t *testing.T) {
	iss := accesstest.NewIssuer(t)
	v := tokens(t, iss)
	ctx := context.Background()
	for _, kid := range []string{"rsa-1", "ec-1"} {
		p, err := v.Principal(ctx, iss.Token(t, kid, iss.Claims("alice", "acme", "ops-lead", "cfo")))
		want := access.Principal{Tenant: "acme", Name: "alice", Roles: []string{"ops-lead", "cfo"}}
		if err != nil || !reflect.DeepEqual(p, want) {
			t.Errorf("%s: %+v, %v; want %+v", kid, p, err, want)
		}
	}
	if n := iss.KeyReads.Load(); n != 1 {
		t.Errorf("the JWKS was read %d times for two tokens, want once (cached)", n)
	}

	iss.AddKey(t, "rsa-2", jose.RS256)
	if p, err := v.Principal(ctx, iss.Token(t, "rsa-2", iss.Claims("bob", "acme"))); err != nil || p.Name != "bob" {
		t.Fatalf("a token of the new key rsa-2: %+v, %v", p, err)
	}
	if n := iss.KeyReads.Load(); n != 2 {
		t.Errorf("after the rotation the JWKS was read %d times, want 2 (read again for the unknown kid)", n)
	}
}

// TestTokenRefused: a token expired, for another audience, of another
// issuer, signed with a key its issuer never published, or without the
// tenant or principal its principal needs is refused with ErrToken,
// saying which without echoing what the token holds; an issuer that
// cannot be reached is ErrIssuerUnavailable.
func TestTokenRefused(t *testing.T) {
	iss, other := accesstest.NewIssuer(t), accesstest.NewIssuer(t)
	v := tokens(t, iss)
	with := func(change func(map[string]any)) map[string]any {
		c := iss.Claims("mallory", "secret-tenant", "secret-role")
		change(c)
		return c
	}
	forged := other.Claims("mallory", "secret-tenant")
	forged["iss"] = iss.URL
	for _, tc := range []struct{ name, token, want string }{
		{"expired", iss.Token(t, "rsa-1", with(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })),
			"it has expired"},
		{"wrong audience", iss.Token(t, "ec-1", with(func(c map[string]any) { c["aud"] = "some-other-app" })),
			"its audience must include " + accesstest.Audience},
		{"unknown issuer", other.Token(t, "rsa-1", other.Claims("mallory", "secret-tenant")),
			"it was not issued by the configured issuer " + iss.URL},
		{"forged signature", other.Token(t, "rsa-1", forged), "it does not verify against the issuer's keys"},
		{"no tenant claim", iss.Token(t, "rsa-1", with(func(c map[string]any) { delete(c, "tenant") })),
			`it has no "tenant" claim naming its tenant`},
		{"bad principal", iss.Token(t, "rsa-1", with(func(c map[string]any) { c["sub"] = "auth0|mallory" })),
			`its "sub" claim is not a principal's name`},
		{"not a JWT", "a.b.c", "it is not a JWT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Principal(context.Background(), tc.token)
			if !errors.Is(err, access.ErrToken) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrToken saying %q", err, tc.want)
			}
			for _, secret := range []string{"mallory", "secret-tenant", "secret-role", "some-other-app", other.URL} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("%q tells the token's %q", err, secret)
				}
			}
		})
	}

	gone := accesstest.NewIssuer(t)
	known := tokens(t, gone)
	if _, err := known.Principal(context.Background(), gone.Token(t, "rsa-1", gone.Claims("alice", "acme"))); err != nil {
		t.Fatal(err)
	}
	gone.AddKey(t, "rsa-2", jose.RS256)
	token := gone.Token(t, "rsa-2", gone.Claims("alice", "acme"))
	gone.Close()
	if _, err := known.Principal(context.Background(), token); !errors.Is(err, access.ErrIssuerUnavailable) {
		t.Errorf("a new key of an issuer that cannot be reached: %v, want ErrIssuerUnavailable", err)
	}
	if _, err := tokens(t, gone).Principal(context.Background(), token); !errors.Is(err, access.ErrIssuerUnavailable) ||
		!strings.Contains(err.Error(), "discovery document") {
		t.Errorf("the discovery of an issuer that cannot be reached: %v, want ErrIssuerUnavailable", err)
	}
}

// TestTokenClaims reads the tenant, principal and roles from the claims
// the settings name, or the tenant from the settings alone.
func TestTokenClaims(t *testing.T) {
	iss := accesstest.NewIssuer(t)
	claims := iss.Claims("ignored", "")
	claims["org"], claims["email"], claims["groups"] = "acme", "alice@acme.com", "ops-lead cfo bad|role"
	v := tokens(t, iss, func(c *access.OIDC) { c.TenantClaim, c.PrincipalClaim, c.RolesClaim = "org", "email", "groups" })
	want := access.Principal{Tenant: "acme", Name: "alice@acme.com", Roles: []string{"ops-lead", "cfo"}}
	if p, err := v.Principal(context.Background(), iss.Token(t, "rsa-1", claims)); err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("claims named by the settings: %+v, %v; want %+v", p, err, want)
	}
	claims["tenant"] = "other"
	fixed := tokens(t, iss, func(c *access.OIDC) { c.Tenant = "acme" })
	if p, err := fixed.Principal(context.Background(), iss.Token(t, "rsa-1", claims)); err != nil || p.Tenant != "acme" || p.Name != "ignored" {
		t.Errorf("a fixed tenant: %+v, %v; want tenant acme whatever the token says", p, err)
	}
}

// TestNewTokensSettings: settings that cannot work are refused, naming
// the setting.
func TestNewTokensSettings(t *testing.T) {
	for _, tc := range []struct {
		cfg  access.OIDC
		want string
	}{
		{access.OIDC{Audience: "a"}, "oidc: no issuer"},
		{access.OIDC{Issuer: "login.example.com", Audience: "a"}, "is not a URL"},
		{access.OIDC{Issuer: "https://login.example.com"}, "oidc: no audience"},
		{access.OIDC{Issuer: "https://login.example.com", Audience: "a", Tenant: "acme", TenantClaim: "org"}, "both tenant and tenant_claim"},
		{access.OIDC{Issuer: "https://login.example.com", Audience: "a", Tenant: "a b"}, `tenant "a b"`},
	} {
		if _, err := access.NewTokens(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
