package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/runner-dev/runner/runner/store"
)

// Where the store keeps the secret /mcp signs with: an item of a tenant
// no principal can be (a tenant's name begins with a letter or a digit),
// made under a lease of a thread no tenant can name.
const (
	mcpSecretTenant = "#runner"
	mcpSecretKey    = "mcp-signing"
	mcpSecretLock   = "#runner/mcp-signing"
)

var mcpSecretNamespace = []string{"secrets"}

// mcpSecret is the key /mcp signs its sessions and request states with: a
// random secret made once and kept in the store, so every replica on the
// store signs alike and a restart keeps its tokens, and nothing a client
// or a reader of the keys file knows derives it. A store without items
// gives this process a secret of its own.
func mcpSecret(ctx context.Context, st store.Store) ([]byte, error) {
	items, ok := st.(store.ItemStore)
	if !ok {
		return randomSecret(), nil
	}
	l, err := acquireRetrying(ctx, st, mcpSecretLock)
	if err != nil {
		return nil, fmt.Errorf("the /mcp signing secret: %w", err)
	}
	defer func() { _ = st.Release(context.WithoutCancel(ctx), l) }()
	var v struct {
		Secret string `json:"secret"`
	}
	it, err := items.Item(ctx, mcpSecretTenant, mcpSecretNamespace, mcpSecretKey, false)
	switch {
	case err == nil:
		if json.Unmarshal(it.Value, &v) == nil {
			if b, err := hex.DecodeString(v.Secret); err == nil && len(b) == 32 {
				return b, nil
			}
		}
		return nil, errors.New("the /mcp signing secret in the store is not 32 bytes in hex")
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("the /mcp signing secret: %w", err)
	}
	secret := randomSecret()
	v.Secret = hex.EncodeToString(secret)
	value, _ := json.Marshal(v)
	if err := items.PutItem(ctx, mcpSecretTenant, &store.Item{Namespace: mcpSecretNamespace, Key: mcpSecretKey, Value: value}); err != nil {
		return nil, fmt.Errorf("the /mcp signing secret: %w", err)
	}
	return secret, nil
}

// acquireRetrying leases thread, waiting up to 10 s while another replica
// holds it.
func acquireRetrying(ctx context.Context, st store.Store, thread string) (store.Lease, error) {
	end := time.Now().Add(10 * time.Second)
	for {
		l, err := st.Acquire(ctx, thread, "mcp-secret/"+rand.Text(), 10*time.Second)
		if !errors.Is(err, store.ErrLeased) || time.Now().After(end) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return l, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// randomSecret is 32 random bytes.
func randomSecret() []byte {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return b[:]
}
