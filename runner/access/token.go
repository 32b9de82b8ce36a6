package access

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// OIDC says which bearer tokens identify principals: JWTs an issuer
// signed for an audience, verified against the keys the issuer publishes
// (OpenID Connect discovery and its JWKS), and the claims that name the
// principal's tenant, name and roles (runner.yaml's oidc section).
type OIDC struct {
	// Issuer is the issuer's URL, as its tokens' iss claim says it; its
	// discovery document is at Issuer/.well-known/openid-configuration.
	Issuer string `yaml:"issuer"`
	// Audience must be among a token's aud claim: the id this server is
	// known by at the issuer.
	Audience string `yaml:"audience"`
	// TenantClaim, PrincipalClaim and RolesClaim name the claims that
	// hold the tenant (default "tenant"), the principal's name (default
	// "sub") and its roles (default "roles": a list, or a string of
	// names separated by spaces).
	TenantClaim    string `yaml:"tenant_claim"`
	PrincipalClaim string `yaml:"principal_claim"`
	RolesClaim     string `yaml:"roles_claim"`
	// Tenant, when set, is every token's tenant, instead of a claim's
	// (an issuer that serves one tenant).
	Tenant string `yaml:"tenant"`
}

// ErrToken is a bearer token's refusal: expired, for another audience,
// of another issuer, badly signed, or without the claims a principal
// needs. Its message says which, never what the token holds; a server
// answers 401.
var ErrToken = errors.New("bearer token refused")

// ErrIssuerUnavailable is the refusal of a token that cannot be checked
// now: the issuer's discovery document or keys could not be read. A
// server answers 503; the token may be good.
var ErrIssuerUnavailable = errors.New("the token issuer cannot be reached")

// Tokens verifies bearer tokens as OIDC says and gives the principal each
// names. The issuer's discovery document is read on the first token (and
// again on the next one while it cannot be read); its keys are cached,
// and read again when a token names a key id they lack (a key rotation).
type Tokens struct {
	cfg    OIDC
	client *http.Client

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier // nil until discovery succeeds
}

// NewTokens returns the verifier of cfg, with its claims' defaults, or
// an error saying which setting is wrong.
func NewTokens(cfg OIDC) (*Tokens, error) {
	u, err := url.Parse(cfg.Issuer)
	switch {
	case cfg.Issuer == "":
		return nil, errors.New("oidc: no issuer: set oidc.issuer to the issuer's URL (https://login.example.com)")
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return nil, fmt.Errorf("oidc: issuer %q is not a URL: write the issuer's URL as its tokens' iss claim says it", cfg.Issuer)
	case cfg.Audience == "":
		return nil, errors.New("oidc: no audience: set oidc.audience to the id this server is known by at the issuer (tokens for other audiences are refused)")
	case cfg.Tenant != "" && cfg.TenantClaim != "":
		return nil, errors.New("oidc: both tenant and tenant_claim are set: set tenant for an issuer of one tenant, or tenant_claim for the claim that names it")
	}
	if err := CheckTenant(cfg.Tenant); err != nil {
		return nil, fmt.Errorf("oidc: %w", err)
	}
	if cfg.Tenant == "" {
		cfg.TenantClaim = or(cfg.TenantClaim, "tenant")
	}
	cfg.PrincipalClaim, cfg.RolesClaim = or(cfg.PrincipalClaim, "sub"), or(cfg.RolesClaim, "roles")
	return &Tokens{cfg: cfg, client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// IsJWT reports whether a bearer credential has a JWT's form (three
// base64url parts joined by dots), which no key NewKey makes has.
func IsJWT(s string) bool { return strings.Count(s, ".") == 2 }

// algorithms are the signature algorithms a token may use: the
// asymmetric ones (a shared secret is no issuer's key).
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// Principal verifies the token raw and returns the principal it names.
// The error wraps ErrToken, or ErrIssuerUnavailable.
func (t *Tokens) Principal(ctx context.Context, raw string) (Principal, error) {
	parsed, err := jwt.ParseSigned(raw, algorithms)
	if err != nil {
		return Principal{}, tokenErr("it is not a JWT signed with an asymmetric key (RS256, ES256, ...)")
	}
	var unverified jwt.Claims
	if parsed.UnsafeClaimsWithoutVerification(&unverified) != nil || unverified.Issuer != t.cfg.Issuer {
		return Principal{}, tokenErr("it was not issued by the configured issuer %s", t.cfg.Issuer)
	}
	v, err := t.verifierFor()
	if err != nil {
		return Principal{}, err
	}
	tok, err := v.Verify(ctx, raw)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired):
		return Principal{}, tokenErr("it has expired: get a new one from the issuer")
	case err != nil && strings.Contains(err.Error(), "fetching keys"): // the JWKS could not be read
		return Principal{}, fmt.Errorf("%w: its keys could not be read; try again", ErrIssuerUnavailable)
	case err != nil:
		return Principal{}, tokenErr("it does not verify against the issuer's keys, or is not valid yet")
	case !slices.Contains(tok.Audience, t.cfg.Audience):
		return Principal{}, tokenErr("it is not for this server: its audience must include %s (oidc.audience)", t.cfg.Audience)
	}
	claims := map[string]any{}
	if err := tok.Claims(&claims); err != nil {
		return Principal{}, tokenErr("its claims are not a JSON object")
	}
	return t.principalOf(claims)
}

// principalOf is the principal a verified token's claims name.
func (t *Tokens) principalOf(claims map[string]any) (Principal, error) {
	p := Principal{Tenant: t.cfg.Tenant}
	if t.cfg.Tenant == "" {
		tenant, _ := claims[t.cfg.TenantClaim].(string)
		if tenant == "" {
			return Principal{}, tokenErr("it has no %q claim naming its tenant: have the issuer add it, or set oidc.tenant_claim (or oidc.tenant for an issuer of one tenant)", t.cfg.TenantClaim)
		}
		if CheckTenant(tenant) != nil {
			return Principal{}, tokenErr("its %q claim is not a tenant's name (letters, digits, '.', '_' and '-')", t.cfg.TenantClaim)
		}
		p.Tenant = tenant
	}
	p.Name, _ = claims[t.cfg.PrincipalClaim].(string)
	if p.Name == "" {
		return Principal{}, tokenErr("it has no %q claim naming its principal: set oidc.principal_claim", t.cfg.PrincipalClaim)
	}
	if checkPrincipal(p.Name) != nil {
		return Principal{}, tokenErr("its %q claim is not a principal's name (letters, digits, '.', '_', '-', '@' and '+'): set oidc.principal_claim to another claim", t.cfg.PrincipalClaim)
	}
	p.Roles = rolesOf(claims[t.cfg.RolesClaim])
	return p, nil
}

// rolesOf reads a roles claim: a list of names, or names separated by
// spaces. A name no role can have (checkRole) is left out: no rule can
// name it.
func rolesOf(v any) []string {
	var names []string
	switch v := v.(type) {
	case string:
		names = strings.Fields(v)
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				names = append(names, s)
			}
		}
	}
	return slices.DeleteFunc(names, func(r string) bool { return checkRole(r) != nil })
}

// verifierFor returns the issuer's verifier, reading its discovery
// document the first time.
func (t *Tokens) verifierFor() (*oidc.IDTokenVerifier, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.verifier != nil {
		return t.verifier, nil
	}
	// The key set outlives the request: it reads keys again when one is missing.
	bg := oidc.ClientContext(context.Background(), t.client)
	dctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	provider, err := oidc.NewProvider(dctx, t.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("%w: its discovery document (%s/.well-known/openid-configuration) could not be read: %v",
			ErrIssuerUnavailable, strings.TrimSuffix(t.cfg.Issuer, "/"), err)
	}
	// The audience is checked by Principal, which says so without echoing the token's.
	t.verifier = provider.VerifierContext(bg, &oidc.Config{SkipClientIDCheck: true})
	return t.verifier, nil
}

// tokenErr is an error wrapping ErrToken.
func tokenErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrToken, fmt.Sprintf(format, args...))
}
