package store_test

import (
	"testing"

	"github.com/runner-dev/runner/runner/store"
	"github.com/runner-dev/runner/runner/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewMemory() })
}

func TestMemoryRunStore(t *testing.T) {
	storetest.RunRunStore(t, func(*testing.T) store.RunStore { return store.NewMemory().(store.RunStore) })
}

func TestMemoryAssistantStore(t *testing.T) {
	storetest.RunAssistantStore(t, func(*testing.T) store.AssistantStore { return store.NewMemory().(store.AssistantStore) })
}

func TestMemoryApprovals(t *testing.T) {
	storetest.RunApprovalStore(t, func(*testing.T) store.Store { return store.NewMemory() })
}

func TestMemoryItemStore(t *testing.T) {
	storetest.RunItemStore(t, func(*testing.T) store.ItemStore { return store.NewMemory().(store.ItemStore) })
}

func TestMemoryCronStore(t *testing.T) {
	storetest.RunCronStore(t, func(*testing.T) store.CronStore { return store.NewMemory().(store.CronStore) })
}

func TestMemoryAudit(t *testing.T) {
	storetest.RunAuditStore(t, func(*testing.T) store.Store { return store.NewMemory() })
}

func TestMemoryWebhooks(t *testing.T) {
	storetest.RunWebhookStore(t, func(*testing.T) store.Store { return store.NewMemory() })
}
