package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/sqlite"
	"github.com/runner-dev/runner/runner/store/storetest"
)

// TestWebhookDeliveries lists the outbox of a store, every tenant's or
// one's, of a status, newest first, and refuses an unknown status.
func TestWebhookDeliveries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	failed := storetest.Delivery("msg_3", "acme", 3)
	failed.Status = store.DeliveryFailed
	if err := st.(store.WebhookStore).Enqueue(context.Background(), storetest.Delivery("msg_1", "acme", 1),
		storetest.Delivery("msg_2", "other", 2), failed); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ids := func(out string) []string {
		var got []string
		for line := range strings.Lines(out) {
			var d store.Delivery
			if err := json.Unmarshal([]byte(line), &d); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			got = append(got, d.ID)
		}
		return got
	}
	dsn := "sqlite:" + path
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "msg_3 msg_2 msg_1"},
		{[]string{"--tenant", "acme"}, "msg_3 msg_1"},
		{[]string{"--status", "pending"}, "msg_2 msg_1"},
		{[]string{"--limit", "1"}, "msg_3"},
	} {
		code, out, errOut := runCLI(t, append([]string{"webhooks", "deliveries", "--store", dsn}, c.args...)...)
		if got := strings.Join(ids(out), " "); code != 0 || got != c.want {
			t.Errorf("%v: exit %d, %s (%s), want %s", c.args, code, got, errOut, c.want)
		}
	}
	if code, _, errOut := runCLI(t, "webhooks", "deliveries", "--status", "sent", "--store", dsn); code != 2 || !strings.Contains(errOut, "pending, delivered or failed") {
		t.Errorf("--status sent: exit %d, %s", code, errOut)
	}
}
