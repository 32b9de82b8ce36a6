package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner/access/accesstest"
)

// TestServeOIDCSettings: runner.yaml's oidc section, with RUNNER_OIDC_*
// over it, is read into the token settings; a setting it does not know is
// refused, naming those it does.
func TestServeOIDCSettings(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	serve, _, err := newRoot().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "runner.yaml"), "oidc:\n  issuer: https://login.example.com\n  audience: runner-api\n  roles_claim: groups\n")
	t.Setenv("RUNNER_OIDC_TENANT_CLAIM", "org")
	cfg, err := loadConfig(serve)
	if err != nil {
		t.Fatal(err)
	}
	if o := cfg.OIDC; o.Issuer != "https://login.example.com" || o.Audience != "runner-api" || o.RolesClaim != "groups" || o.TenantClaim != "org" {
		t.Errorf("oidc settings = %+v", o)
	}
	writeFile(t, filepath.Join(dir, "runner.yaml"), "oidc:\n  issuer: https://login.example.com\n  audiance: runner-api\n")
	if _, err := loadConfig(serve); err == nil || !strings.Contains(err.Error(), `oidc settings: unknown setting "audiance": the settings are issuer, audience,`) {
		t.Errorf("a misspelt setting: %v", err)
	}
}

// TestServeOIDC starts the real binary with runner.yaml's oidc section
// naming a real issuer: a token of the issuer is served, as the API key
// beside it is; a token for another audience is a 401 with
// WWW-Authenticate: Bearer.
func TestServeOIDC(t *testing.T) {
	bin, err := buildRunner()
	if err != nil {
		t.Fatal(err)
	}
	iss := accesstest.NewIssuer(t)
	root, _ := filepath.Abs("../..")
	conf := filepath.Join(t.TempDir(), "runner.yaml")
	writeFile(t, conf, "paths: ["+strings.Join([]string{filepath.Join(root, "pipelines"), filepath.Join(root, "agents"), filepath.Join(root, "rules")}, ", ")+"]\n"+
		"oidc:\n  issuer: "+iss.URL+"\n  audience: "+accesstest.Audience+"\n")
	_, base := startServe(t, bin, serveScript, "sk-test", "--config", conf)

	send := func(header, value string) *http.Response {
		req, _ := http.NewRequest("POST", base+"/assistants/search", strings.NewReader(`{"limit": 1}`))
		req.Header.Set(header, value)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := send("Authorization", "Bearer "+iss.Token(t, "ec-1", iss.Claims("alice", "acme", "ops-lead"))); resp.StatusCode != 200 {
		t.Errorf("a token of the issuer: %d, want 200", resp.StatusCode)
	}
	if resp := send("X-Api-Key", "sk-test"); resp.StatusCode != 200 {
		t.Errorf("the API key: %d, want 200", resp.StatusCode)
	}
	claims := iss.Claims("alice", "acme")
	claims["aud"] = "another-app"
	if resp := send("Authorization", "Bearer "+iss.Token(t, "rsa-1", claims)); resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("a token for another audience: %d %q, want 401 with WWW-Authenticate: Bearer", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}
