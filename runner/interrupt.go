package runner

import (
	"errors"
	"fmt"
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
}

func (i *Interrupt) Error() string {
	return fmt.Sprintf("interrupted at %s (%s)", i.Node, i.Kind)
}

// ErrInvalidResume wraps a resume value the interrupted node refuses; the
// thread stays interrupted.
var ErrInvalidResume = errors.New("invalid resume value")

// InvalidResume returns an error saying why a resume value was refused.
func InvalidResume(why error) error { return fmt.Errorf("%w: %v", ErrInvalidResume, why) }

// Permanent marks a node error that retrying cannot fix.
func Permanent(err error) error { return permanent{err} }

type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

func isPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
