package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runner-dev/runner/runner/store"
)

// Interrupt pauses a thread until a human resumes it. A node returns it as
// its error; on resume the same node runs again with Input.Resume set.
type Interrupt struct {
	Node    string         `json:"node"`
	Kind    string         `json:"kind"`
	Message string         `json:"message,omitempty"`
	Payload map[string]any `json:"payload,omitempty"`
	// ResumeSchema is the JSON Schema the resume value must satisfy.
	ResumeSchema map[string]any `json:"resume_schema,omitempty"`
	// Rule is the require_hitl rule of an approval gate.
	Rule string `json:"rule,omitempty"`
	// Update is written to the state as the thread pauses (the tools node
	// strips the round that asked for gated calls).
	Update Update `json:"-"`
}

func (i *Interrupt) Error() string {
	return fmt.Sprintf("interrupted at %s (%s)", i.Node, i.Kind)
}

// pendingInterrupt decodes a checkpoint's pending interrupt; nil when it
// has none.
func pendingInterrupt(cp *store.Checkpoint) *Interrupt {
	if len(cp.Interrupt) == 0 {
		return nil
	}
	var intr Interrupt
	dec := json.NewDecoder(bytes.NewReader(cp.Interrupt))
	dec.UseNumber()
	if dec.Decode(&intr) != nil {
		return nil
	}
	intr.Payload = normalizeObject(intr.Payload)
	return &intr
}

// ErrInvalidResume wraps a resume value the interrupted node refuses; the
// thread stays interrupted.
var ErrInvalidResume = errors.New("invalid resume value")

// InvalidResume returns an error saying why a resume value was refused.
func InvalidResume(why error) error { return fmt.Errorf("%w: %v", ErrInvalidResume, why) }

// Permanent marks a node error that retrying cannot fix.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

func isPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
