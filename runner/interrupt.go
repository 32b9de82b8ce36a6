package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google/uuid"

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
	// ID names the interrupt while it is pending (a UUID, stable across
	// reads and restarts): a resume value may be a map from IDs to values,
	// to answer some of several interrupts.
	ID string `json:"id,omitempty"`
	// Pending lists the interrupts a node waits on at once (its parallel
	// branches each paused): each has its own ID.
	Pending []*Interrupt `json:"pending,omitempty"`
	// Update is written to the state as the thread pauses (the tools node
	// strips the round that asked for gated calls).
	Update Update `json:"-"`
}

// interruptNS is the UUID namespace of interrupt IDs.
var interruptNS = uuid.MustParse("a3c5f7e1-4b2d-5e8f-9a0b-1c2d3e4f5a6b")

// interruptID is the ID of an interrupt a thread records in checkpoint cp.
func interruptID(thread string, cp int64) string {
	return uuid.NewSHA1(interruptNS, fmt.Appendf(nil, "%s/%d", thread, cp)).String()
}

// Leaves returns the interrupts that wait for a value: the pending ones of
// a node that waits on several, else i itself.
func (i *Interrupt) Leaves() []*Interrupt {
	if len(i.Pending) > 0 {
		return i.Pending
	}
	return []*Interrupt{i}
}

// ValueFor picks the resume value meant for interrupt it: from a map keyed
// by interrupt IDs, its entry (ok false when the map has none for it);
// any other value is meant for every pending interrupt.
// An interrupt that waits on several gets the whole map when it names one
// of them.
func ValueFor(resume any, it *Interrupt) (any, bool) {
	m, ok := resume.(map[string]any)
	if !ok || len(m) == 0 {
		return resume, true
	}
	for k := range m {
		if uuid.Validate(k) != nil {
			return resume, true // not keyed by IDs: a value of its own
		}
	}
	if v, ok := m[it.ID]; ok {
		return v, true
	}
	for _, p := range it.Pending {
		if _, ok := ValueFor(resume, p); ok {
			return resume, true
		}
	}
	return nil, false
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
// It wraps ErrInvalidResume and, the value being the caller's input to
// fix, ErrInput: the CLI exits 2 and the server answers 422.
func InvalidResume(why error) error { return refusal{why} }

// refusal is a resume value a node refused.
type refusal struct{ why error }

func (e refusal) Error() string { return ErrInvalidResume.Error() + ": " + e.why.Error() }

func (e refusal) Is(target error) bool { return target == ErrInvalidResume || target == ErrInput }

func (e refusal) Unwrap() error { return e.why }

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

func isPermanent(err error) bool { return isA[permanent](err) }
