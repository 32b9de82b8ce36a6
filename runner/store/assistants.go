package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Assistant is one version of an assistant a client created (LangGraph's
// assistants): a graph with its configuration, one tenant's. An
// assistant's versions are numbered from 1; one of them is its current
// version, the one it runs.
type Assistant struct {
	ID, Tenant string
	Version    int
	GraphID    string
	Name       string
	// Description may be empty.
	Description string
	// Config, Context and Metadata are JSON objects (nil: none).
	Config, Context, Metadata json.RawMessage
	// CreatedAt is when the assistant was created, UpdatedAt when its
	// current version last changed; in a list of versions both are when
	// the version was written.
	CreatedAt, UpdatedAt time.Time
}

// AssistantStore keeps assistants and their versions per tenant.
// Implementations are safe for concurrent use.
type AssistantStore interface {
	// PutAssistant writes version a.Version of assistant a.ID and makes
	// it current: version 1 creates the assistant (ErrConflict when the
	// tenant has one of that ID); a later version must be the next after
	// the assistant's newest (ErrConflict otherwise; ErrNotFound for an
	// unknown assistant). A zero a.CreatedAt is set to now.
	PutAssistant(ctx context.Context, a *Assistant) error
	// Assistant returns the tenant's assistant id at its current version.
	// ErrNotFound for an unknown one.
	Assistant(ctx context.Context, tenant, id string) (*Assistant, error)
	// AssistantVersions lists an assistant's versions, newest first.
	// ErrNotFound for an unknown assistant.
	AssistantVersions(ctx context.Context, tenant, id string) ([]Assistant, error)
	// SetAssistantVersion makes version the assistant's current one.
	// ErrNotFound for an unknown assistant or version.
	SetAssistantVersion(ctx context.Context, tenant, id string, version int) error
	// DeleteAssistant removes an assistant with all its versions.
	// ErrNotFound for an unknown one.
	DeleteAssistant(ctx context.Context, tenant, id string) error
	// Assistants lists the tenant's assistants at their current
	// versions, newest created first, ties by ID.
	Assistants(ctx context.Context, tenant string) ([]Assistant, error)
}

// CheckAssistant validates a before a PutAssistant and stamps a zero
// CreatedAt (and UpdatedAt, to the same time).
func CheckAssistant(a *Assistant, now time.Time) error {
	switch {
	case a == nil || a.ID == "":
		return errors.New("store: put assistant: empty id")
	case a.Version < 1:
		return fmt.Errorf("store: put assistant %q: version %d, want >= 1", a.ID, a.Version)
	case a.GraphID == "":
		return fmt.Errorf("store: put assistant %q: empty graph id", a.ID)
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now
	}
	a.CreatedAt = a.CreatedAt.UTC()
	a.UpdatedAt = a.CreatedAt
	return nil
}

// AssistantNotFound is the error for an unknown assistant, or version of
// one (version > 0).
func AssistantNotFound(id string, version int) error {
	if version > 0 {
		return fmt.Errorf("store: assistant %q has no version %d: %w", id, version, ErrNotFound)
	}
	return RecordNotFound("assistant", id)
}

// AssistantVersionConflict is the error for a version written out of turn.
func AssistantVersionConflict(id string, version int) error {
	if version == 1 {
		return ConflictRecord("assistant", id)
	}
	return fmt.Errorf("store: assistant %q: version %d is not the next: %w", id, version, ErrConflict)
}
