package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// TestMCPSigningSecret: /mcp signs with a secret kept in the store — two
// servers on one store verify each other's request states, and a restart
// keeps them — not with a key derived from the keys file: a request state
// signed with the API key hashes, as it was, is refused, and so is one of
// a server on another store.
func TestMCPSigningSecret(t *testing.T) {
	keys := access.Keys{access.HashKey("sk-acme"): {Tenant: "acme"}}
	db := filepath.Join(t.TempDir(), "state.db")
	open := func(st store.Store) *Server {
		t.Helper()
		s, err := New(context.Background(), Config{Store: st, Keys: keys, MCP: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		return s
	}
	stores := make([]store.Store, 2)
	for i := range stores {
		st, err := sqlite.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		stores[i] = st
	}
	a, b := open(stores[0]), open(stores[1])
	st := mcpState{Tenant: "acme", Thread: "t1", Interrupts: []string{"i1"}}
	if _, err := b.mcpVerify(a.mcpSign(st), "acme"); err != nil {
		t.Errorf("a request state a signed, read by b on the same store: %v", err)
	}
	if _, err := open(stores[0]).mcpVerify(a.mcpSign(st), "acme"); err != nil {
		t.Errorf("a request state read after a restart: %v", err)
	}
	if _, err := open(store.NewMemory()).mcpVerify(a.mcpSign(st), "acme"); err == nil {
		t.Error("a server on another store took a's request state")
	}
	// The old scheme: the key was a hash of the keys file's key hashes.
	h := sha256.New()
	h.Write([]byte("runner /mcp signing key\x00"))
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		h.Write([]byte(strings.ToLower(k) + "\x00"))
	}
	data, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(data)
	m := hmac.New(sha256.New, h.Sum(nil))
	m.Write([]byte("state\x00" + payload))
	forged := payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	if _, err := a.mcpVerify(forged, "acme"); err == nil {
		t.Error("a request state signed from the keys file's hashes was taken")
	}
}
