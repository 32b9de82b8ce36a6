package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/access/accesstest"
	"github.com/runner-dev/runner/server"
)

// withIssuer has the server verify bearer tokens of a new issuer, beside
// its API keys, and returns the issuer.
func withIssuer(t *testing.T, iss **accesstest.Issuer) func(*server.Config) {
	*iss = accesstest.NewIssuer(t)
	tokens, err := access.NewTokens(access.OIDC{Issuer: (*iss).URL, Audience: accesstest.Audience})
	if err != nil {
		t.Fatal(err)
	}
	return func(c *server.Config) { c.Tokens = tokens }
}

// bearer has e's requests carry a token of iss with claims, signed with
// its key kid, instead of an API key.
func (e *env) bearer(iss *accesstest.Issuer, kid string, claims map[string]any) {
	e.key = ""
	e.token = iss.Token(e.t, kid, claims)
}

// TestBearerTokens serves the payout agent to principals of an OIDC
// issuer's tokens beside API keys: a token's principal starts a run and
// is its requester; a role-less token cannot decide the gate (403, the
// thread unchanged) and cfo tokens, RS256 and ES256, can; a token of
// another tenant does not reach the thread; the API key of the same
// tenant still does.
func TestBearerTokens(t *testing.T) {
	var iss *accesstest.Issuer
	e := newEnv(t, withPayout(t), withIssuer(t, &iss))
	history := func() string {
		b, _ := json.Marshal(e.list("POST", "/threads/t1/history", map[string]any{"limit": 100}))
		return string(b)
	}
	e.bearer(iss, "rsa-1", iss.Claims("alice", "acme", "cfo"))
	e.call("POST", "/threads", map[string]any{"thread_id": "t1"}, 200)
	paused := e.call("POST", "/threads/t1/runs/wait", map[string]any{"assistant_id": "payout", "input": map[string]any{"amount": 20000}}, 200)
	if b := ballotOf(paused); b == nil || b["requester"] != "alice" {
		t.Fatalf("the gate's ballot is %v, want alice, the token's principal, as its requester", b)
	}
	approve := map[string]any{"assistant_id": "payout", "command": map[string]any{"resume": map[string]any{"approved": true}}}

	e.bearer(iss, "rsa-1", iss.Claims("bob", "acme"))
	before := history()
	if body := string(e.raw("POST", "/threads/t1/runs/wait", approve, 403)); !strings.Contains(body, "bob is not among its reviewers (roles cfo)") {
		t.Errorf("a role-less token's decision: %s", body)
	}
	if history() != before {
		t.Error("a role-less token's refused decision changed the thread")
	}

	e.bearer(iss, "ec-1", iss.Claims("eve", "other", "cfo"))
	e.raw("GET", "/threads/t1", nil, 404)
	e.raw("POST", "/threads/t1/runs/wait", approve, 404)

	e.bearer(iss, "rsa-1", iss.Claims("carol", "acme", "cfo"))
	if out := e.call("POST", "/threads/t1/runs/wait", approve, 200); fmt.Sprint(ballotOf(out)["approved_by"]) != "[carol]" {
		t.Fatalf("carol's approval: %v", out)
	}
	e.bearer(iss, "ec-1", iss.Claims("dave", "acme", "cfo"))
	if out := e.call("POST", "/threads/t1/runs/wait", approve, 200); strings.Count(fmt.Sprint(out["records"]), "paid 20000") != 1 {
		t.Fatalf("dave's approval: %v, want the payout made once", out)
	}
	e.key, e.token = "sk-bob", ""
	e.call("GET", "/threads/t1", nil, 200)
}

// TestBearerTokenRefused: a token expired, for another audience, of an
// unknown issuer or without a tenant claim is a 401 problem with
// WWW-Authenticate: Bearer, saying why without echoing the token's
// claims; so is a request with no credentials. A key rotation is picked
// up; an issuer that cannot be reached is a 503.
func TestBearerTokenRefused(t *testing.T) {
	var iss *accesstest.Issuer
	e := newEnv(t, withIssuer(t, &iss))
	stranger := accesstest.NewIssuer(t)
	claims := func(change func(map[string]any)) map[string]any {
		c := iss.Claims("mallory", "acme", "secret-role")
		change(c)
		return c
	}
	for _, tc := range []struct{ name, token, want string }{
		{"expired", iss.Token(t, "rsa-1", claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), "it has expired"},
		{"wrong audience", iss.Token(t, "rsa-1", claims(func(c map[string]any) { c["aud"] = "some-other-app" })), "it is not for this server"},
		{"unknown issuer", stranger.Token(t, "rsa-1", stranger.Claims("mallory", "acme")), "it was not issued by the configured issuer"},
		{"no tenant claim", iss.Token(t, "ec-1", claims(func(c map[string]any) { delete(c, "tenant") })), `it has no "tenant" claim`},
		{"no credentials", "", "a valid API key (x-api-key header or Authorization: Bearer) or a bearer token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.key, e.token = "", tc.token
			resp := e.request("POST", "/threads", map[string]any{})
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var problem struct{ Detail string }
			_ = json.Unmarshal(body, &problem)
			if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") ||
				resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(problem.Detail, tc.want) {
				t.Fatalf("%d %q %s, want a 401 problem saying %q with WWW-Authenticate: Bearer", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, tc.want)
			}
			for _, secret := range []string{"mallory", "secret-role", "some-other-app", stranger.URL} {
				if strings.Contains(string(body), secret) {
					t.Errorf("the problem tells the token's %q: %s", secret, body)
				}
			}
		})
	}

	iss.AddKey(t, "rsa-2", "RS256")
	e.bearer(iss, "rsa-2", iss.Claims("alice", "acme"))
	e.call("POST", "/threads", map[string]any{}, 200)
	iss.AddKey(t, "rsa-3", "RS256")
	e.bearer(iss, "rsa-3", iss.Claims("alice", "acme"))
	iss.Close()
	if p := e.call("POST", "/threads", map[string]any{}, http.StatusServiceUnavailable); !strings.Contains(fmt.Sprint(p["detail"]), "the token issuer cannot be reached") {
		t.Errorf("an issuer that cannot be reached: %v", p)
	}
}

// TestConsoleSignInBesideTokens: with an issuer configured, the console's
// sign-in goes as before — its probe without a key is refused, so it asks
// for one, and its calls with the key (x-api-key) are served.
func TestConsoleSignInBesideTokens(t *testing.T) {
	var iss *accesstest.Issuer
	e := newEnv(t, withIssuer(t, &iss))
	e.raw("GET", "/ui/", nil, 200)
	e.key = ""
	e.raw("POST", "/assistants/search", map[string]any{"limit": 1}, 401)
	e.key = testKey
	e.raw("POST", "/assistants/search", map[string]any{"limit": 1}, 200)
}
