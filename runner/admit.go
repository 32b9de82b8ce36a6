package runner

import (
	"errors"
	"fmt"
	"strings"
)

// A caller that admits runs on behalf of clients (a server) checks what a
// client sent before it starts anything: the input (Graph.Admit), values
// written to a thread's state (Graph.CheckValues), a resume value
// (CheckResume), and that no other process runs the thread (Engine.CheckFree). Its errors
// name the fields that do not fit (FieldErrors).

// FieldError is one value of a caller's input that does not fit what the
// graph declares: where it is (a path from the top-level field down,
// "messages[0].role") and what is wrong with it.
type FieldError struct {
	Path    string
	Message string
}

// FieldErrorer is an error that names the fields it refuses (dsl's input,
// state and config errors).
type FieldErrorer interface {
	error
	FieldErrors() []FieldError
}

// FieldErrors returns the fields err refuses, each path under prefix
// ("input", "command.update"); nil when it names none.
func FieldErrors(err error, prefix string) []FieldError {
	fe, ok := errors.AsType[FieldErrorer](err)
	if !ok {
		return nil
	}
	out := fe.FieldErrors()
	for i := range out {
		switch p := out[i].Path; {
		case p == "":
			out[i].Path = prefix
		case strings.HasPrefix(p, "["):
			out[i].Path = prefix + p
		default:
			out[i].Path = prefix + "." + p
		}
	}
	return out
}

// CheckValues checks values written to a thread's state — an edit
// (Engine.Update, Engine.Goto), a command's update, a resumed run's input —
// against the graph's declared state and returns them normalised; the
// error wraps ErrInput and names each field that does not fit. Without a
// Graph.CheckState every value is taken.
func (g *Graph) CheckValues(values map[string]any) (map[string]any, error) {
	values = normalizeObject(values)
	if g.CheckState == nil {
		return values, nil
	}
	out, err := g.CheckState(values)
	if err != nil && !errors.Is(err, ErrInput) {
		err = fmt.Errorf("%w: %w", ErrInput, err)
	}
	return out, err
}

// ErrNotResumable is wrapped by Resume's error for a thread that cannot be
// resumed as it stands: it completed, runs another pipeline, ran under
// other definitions, or stopped before a node the graph no longer has.
var ErrNotResumable = errors.New("thread cannot be resumed")

// notResumable marks err as ErrNotResumable, its message its own.
func notResumable(err error) error { return notResumableError{err} }

type notResumableError struct{ error }

func (e notResumableError) Is(target error) bool { return target == ErrNotResumable }

func (e notResumableError) Unwrap() error { return e.error }
