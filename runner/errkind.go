package runner

import (
	"errors"
	"slices"
)

// Error kinds: what a node's on_error entries match, and what expressions
// see as error.kind. KindAny matches every error but a budget's.
const (
	KindTimeout    = "timeout"
	KindHTTP4xx    = "http_4xx"
	KindHTTP5xx    = "http_5xx"
	KindValidation = "validation"
	KindBudgetErr  = "budget"
	KindTool       = "tool"
	KindLLM        = "llm"
	KindAny        = "any"
	// KindOther is the kind of an error no other kind fits.
	KindOther = "error"
)

// ErrorKinds lists the kinds an on_error entry may name, KindAny last.
var ErrorKinds = []string{KindTimeout, KindHTTP4xx, KindHTTP5xx, KindValidation, KindBudgetErr, KindTool, KindLLM, KindAny}

// HTTPError is a response with a non-2xx status: from an HTTP tool's
// service. (A provider's is a ProviderError, which carries its status.)
// Its message is its cause's.
type HTTPError struct {
	Status int
	Err    error
}

func (e *HTTPError) Error() string { return e.Err.Error() }

func (e *HTTPError) Unwrap() error { return e.Err }

// ValidationError is a value that does not fit its schema: a tool call's
// arguments, a model's structured reply. Its message is its cause's.
type ValidationError struct{ Err error }

func (e *ValidationError) Error() string { return e.Err.Error() }

func (e *ValidationError) Unwrap() error { return e.Err }

// ToolError is a tool call that failed: the call path wraps every error a
// tool returns in one. Its message is its cause's.
type ToolError struct {
	Tool string
	Err  error
}

func (e *ToolError) Error() string { return e.Err.Error() }

func (e *ToolError) Unwrap() error { return e.Err }

// ErrorKindsOf returns the kinds of err, the most specific first: a tool
// call to a service answering 503 is http_5xx and tool; an error no kind
// fits is KindOther alone.
func ErrorKindsOf(err error) []string {
	var kinds []string
	add := func(k string, ok bool) {
		if ok {
			kinds = append(kinds, k)
		}
	}
	add(KindBudgetErr, isA[*BudgetError](err))
	add(KindTimeout, isA[*TimeoutError](err))
	add(KindValidation, isA[*ValidationError](err))
	status := httpStatus(err)
	add(KindHTTP4xx, status >= 400 && status < 500)
	add(KindHTTP5xx, status >= 500 && status < 600)
	add(KindLLM, isA[*ProviderError](err))
	add(KindTool, isA[*ToolError](err))
	if len(kinds) == 0 {
		kinds = append(kinds, KindOther)
	}
	return kinds
}

// httpStatus is the HTTP status err carries, 0 when none.
func httpStatus(err error) int {
	if he, ok := errors.AsType[*HTTPError](err); ok {
		return he.Status
	}
	if pe, ok := errors.AsType[*ProviderError](err); ok {
		return pe.Status
	}
	return 0
}

// isA reports whether an error in err's tree is an E (errors.AsType, for
// a condition).
func isA[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}

// Catch is one entry of a step's on_error: the error kinds it catches
// (none, or KindAny: every error but a budget's) and the node it routes to.
type Catch struct {
	When []string
	To   string
}

// catches reports whether the entry catches an error of kinds. A budget
// error is caught only by an entry that names budget.
func (c Catch) catches(kinds []string) bool {
	if len(c.When) == 0 || slices.Contains(c.When, KindAny) {
		return !slices.Contains(kinds, KindBudgetErr)
	}
	for _, k := range c.When {
		if slices.Contains(kinds, k) {
			return true
		}
	}
	return false
}

// catchOf returns the first entry of on_error that catches an error of
// kinds, and its index; "" and -1 when none does.
func catchOf(onError []Catch, kinds []string) (string, int) {
	for i, c := range onError {
		if c.catches(kinds) {
			return c.To, i
		}
	}
	return "", -1
}

// caughtError is what expressions see as error: the message, kind and
// node of the error a route caught last in the run (an on_error entry, a
// pipeline's on_error or on_timeout handler); empty strings when none.
func caughtError(message, kind, node string) map[string]any {
	return map[string]any{"message": message, "kind": kind, "node": node}
}

// noError is the error variable of a run that caught none.
var noError = caughtError("", "", "")
