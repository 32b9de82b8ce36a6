package server

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/runner/store"
)

// The error contract. Every error response is an RFC 9457 problem whose
// type is one of the stable URIs below (docs/serving.md, "The error
// contract"); an error after a stream started is an error event with the
// same body. A refusal the client can fix is a 4xx that says what to fix
// (errors: each refused field's path); a fault of the server or its store
// is a 5xx that says nothing of its cause: the cause is logged in full
// under the request id every response carries (X-Request-Id, and the
// problem's request_id).

// problemBase is the prefix of every problem type URI.
const problemBase = "https://runner.dev/problems/"

// Problem types beyond those a status alone names (problemTypes).
const (
	// typeInvalidInput: a run's input, state values or configurable
	// values that do not fit what the pipeline declares.
	typeInvalidInput = problemBase + "invalid-input"
	// typeInvalidResume: a resume value or a decision the pending
	// interrupt refuses (the thread stays paused).
	typeInvalidResume = problemBase + "invalid-resume"
	// typeThreadBusy: a run runs or waits on the thread, on this server
	// or another one sharing the store.
	typeThreadBusy = problemBase + "thread-busy"
	// typeNotInterrupted: a resume of a thread that waits on no
	// interrupt.
	typeNotInterrupted = problemBase + "not-interrupted"
	// typeRunFailed: a run that failed (error events only).
	typeRunFailed = problemBase + "run-failed"
	// typeStreamEnded: a stream that ends before its run does (error
	// events only): it reached its maximum duration, its thread was
	// deleted, or the store failed; the client may rejoin.
	typeStreamEnded = problemBase + "stream-ended"
)

// problemTypes is the type of a problem of each status, unless it is one
// of the kinds above.
var problemTypes = map[int]string{
	http.StatusBadRequest:            "bad-request",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not-found",
	http.StatusRequestTimeout:        "request-timeout",
	http.StatusConflict:              "conflict",
	http.StatusRequestEntityTooLarge: "too-large",
	http.StatusUnprocessableEntity:   "invalid-request",
	http.StatusTooManyRequests:       "too-many-requests",
	http.StatusInternalServerError:   "internal",
	http.StatusNotImplemented:        "not-implemented",
	http.StatusServiceUnavailable:    "unavailable",
	http.StatusInsufficientStorage:   "storage-full",
}

// problem is an RFC 9457 problem detail: the body of every error response
// and the data of a stream's error event.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Errors locate what a client must fix in its request: each refused
	// field's JSON path (config.recursion_limit, input.messages[0].role)
	// and what is wrong with it.
	Errors []fieldError `json:"errors,omitempty"`
	// RequestID names the request in the server's log.
	RequestID string `json:"request_id,omitempty"`
}

// fieldError is one refused field of a request.
type fieldError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (p *problem) Error() string { return p.Detail }

// problemf is a problem of status whose detail is formatted, of the type
// the status names.
func problemf(status int, format string, args ...any) *problem {
	typ := "about:blank"
	if slug, ok := problemTypes[status]; ok {
		typ = problemBase + slug
	}
	return &problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: fmt.Sprintf(format, args...)}
}

// as gives p the type typ.
func (p *problem) as(typ string) *problem {
	p.Type = typ
	return p
}

// invalid is the 422 of a request whose fields errs refuses; detail says
// what the request got wrong as a whole.
func invalid(detail string, errs ...fieldError) *problem {
	p := problemf(http.StatusUnprocessableEntity, "%s", detail)
	p.Errors = errs
	return p
}

// fieldProblem is the 422 of the value at path: format says what is
// wrong with it.
func fieldProblem(path, format string, args ...any) *problem {
	msg := fmt.Sprintf(format, args...)
	return invalid(path+": "+msg, fieldError{Path: path, Message: msg})
}

// writeProblem answers err as a problem (asProblem), logging the cause of
// a 5xx in full under the request's id.
func (s *Server) writeProblem(w http.ResponseWriter, err error) {
	p := asProblem(err)
	if p.Status >= 500 {
		s.cfg.Log.Error("request failed", "request_id", w.Header().Get(requestIDHeader), "status", p.Status, "err", err)
	}
	respond(w, p)
}

// respond writes p as the response, with the request's id.
func respond(w http.ResponseWriter, p *problem) {
	p.RequestID = w.Header().Get(requestIDHeader)
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// asProblem is err as a problem: a *problem as it is; a refusal of
// runner or the store by its kind, with runner's message and the fields
// it names; a store fault (503, 507) or any other error (500) as a
// generic problem that says nothing of its cause.
func asProblem(err error) *problem {
	if p, ok := errors.AsType[*problem](err); ok {
		return p
	}
	if mb, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return problemf(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", mb.Limit)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return problemf(http.StatusNotFound, "not found (or not yours)")
	case errors.Is(err, access.ErrForbidden):
		return problemf(http.StatusForbidden, "%v", err)
	case errors.Is(err, runner.ErrInvalidResume) && errors.Is(err, runner.ErrInput):
		return problemf(http.StatusUnprocessableEntity, "%v", err).as(typeInvalidResume)
	case errors.Is(err, runner.ErrInvalidResume):
		return problemf(http.StatusConflict, "%v", err).as(typeNotInterrupted)
	case errors.Is(err, runner.ErrInput):
		p := invalid(err.Error(), fieldErrorsOf(err, "")...).as(typeInvalidInput)
		return p
	case errors.Is(err, runner.ErrThreadBusy):
		return busyProblem(err)
	case errors.Is(err, runner.ErrNotResumable):
		return problemf(http.StatusConflict, "%v", err)
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrFenced):
		return problemf(http.StatusConflict, "the thread changed meanwhile (another writer got there first); read it again and retry")
	case errors.Is(err, store.ErrFull):
		return problemf(http.StatusInsufficientStorage, "the store's disk is full; retry once an operator has made room (the request id names the fault in the server's log)")
	case errors.Is(err, store.ErrUnavailable):
		return problemf(http.StatusServiceUnavailable, "the store is unavailable; retry later (the request id names the fault in the server's log)")
	}
	return problemf(http.StatusInternalServerError, "the server failed; the request id names the fault in the server's log")
}

// busyProblem is the 409 of a run refused because its thread is busy:
// leased by another server (which it does not name), or running here.
func busyProblem(err error) *problem {
	held, ok := errors.AsType[*store.HeldError](err)
	if !ok {
		return problemf(http.StatusConflict, "%v", err).as(typeThreadBusy)
	}
	return problemf(http.StatusConflict, "thread %s is running on another server (or was, until it stopped: its lease expires at %s); "+
		"retry once that run has ended", access.ThreadID(held.Thread), held.Expires.UTC().Format(time.RFC3339)).as(typeThreadBusy)
}

// inputProblem is err, a refusal of values the client sent at path
// (input, command.update, values), as a problem naming each field it
// refuses under path.
func inputProblem(err error, path string) error {
	if !errors.Is(err, runner.ErrInput) {
		return err
	}
	typ := typeInvalidInput
	if errors.Is(err, runner.ErrInvalidResume) {
		typ = typeInvalidResume
	}
	return invalid(err.Error(), fieldErrorsOf(err, path)...).as(typ)
}

// fieldErrorsOf are the fields err refuses, under path.
func fieldErrorsOf(err error, path string) []fieldError {
	var out []fieldError
	for _, fe := range runner.FieldErrors(err, path) {
		out = append(out, fieldError{Path: fe.Path, Message: fe.Message})
	}
	return out
}

// requestIDHeader carries the request's id, on every response.
const requestIDHeader = "X-Request-Id"

// clientRequestID is a request id a client may choose.
var clientRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// requestID is the id of the request r: the client's own when it sent a
// plausible one, else a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get(requestIDHeader); clientRequestID.MatchString(id) {
		return id
	}
	return rand.Text()
}

// writeJSON writes v as a JSON response of status, with its length: the
// body goes out whole, not chunked, in one write where it fits. A value
// that cannot be encoded is a 500 problem.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if err := runner.WriteJSON(sized{w, status}, v, false); err != nil {
		respond(w, problemf(http.StatusInternalServerError, "the answer cannot be encoded as JSON: %v", err))
	}
}

// sized writes a JSON body of status, given whole in one Write, with its
// Content-Length.
type sized struct {
	w      http.ResponseWriter
	status int
}

func (s sized) Write(body []byte) (int, error) {
	h := s.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	s.w.WriteHeader(s.status)
	return s.w.Write(body)
}

// decodeBody decodes a JSON request body, one JSON object, into v; an
// empty body leaves v as it is. A body that is not valid JSON, or whose
// values do not have the types of v's fields, is a 422 naming the field.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		return invalid("the request body holds more than one JSON value; send one object")
	}
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return err
	}
	if _, ok := errors.AsType[*problem](err); ok { // a body too slow (bound)
		return err
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		path, want := te.Field, jsonKind(te.Type.Kind().String())
		if path == "" {
			return invalid(fmt.Sprintf("the request body must be a JSON object, not %s", te.Value))
		}
		return fieldProblem(path, "must be %s, not %s", want, te.Value)
	}
	return invalid(fmt.Sprintf("the request body is not valid JSON: %v", err))
}

// jsonKind names, as JSON does, the kind of Go value a field holds.
func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "another type"
}
