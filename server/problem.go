package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store"
)

// problem is an RFC 9457 problem detail, the body of every error response.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

func (p *problem) Error() string { return p.Detail }

// problemf is a problem of status whose detail is formatted.
func problemf(status int, format string, args ...any) *problem {
	return &problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: fmt.Sprintf(format, args...)}
}

// writeProblem writes err as a problem: a *problem as it is, a store or
// runtime error by its kind, anything else as a 500.
func writeProblem(w http.ResponseWriter, err error) {
	p := asProblem(err)
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func asProblem(err error) *problem {
	if p, ok := errors.AsType[*problem](err); ok {
		return p
	}
	if mb, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return problemf(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", mb.Limit)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return problemf(http.StatusNotFound, "%v", err)
	case errors.Is(err, runner.ErrInput):
		return problemf(http.StatusUnprocessableEntity, "%v", err)
	case errors.Is(err, runner.ErrThreadBusy), errors.Is(err, runner.ErrInvalidResume), errors.Is(err, store.ErrConflict):
		return problemf(http.StatusConflict, "%v", err)
	case errors.Is(err, store.ErrFull):
		return problemf(http.StatusInsufficientStorage, "%v", err)
	case errors.Is(err, store.ErrUnavailable):
		return problemf(http.StatusServiceUnavailable, "%v", err)
	}
	return problemf(http.StatusInternalServerError, "%v", err)
}

// writeJSON writes v as a JSON response of status, with its length: the
// body goes out whole, not chunked, in one write where it fits. A value
// that cannot be encoded is a 500 problem.
func writeJSON(w http.ResponseWriter, status int, v any) {
	if err := runner.WriteJSON(sized{w, status}, v, false); err != nil {
		writeProblem(w, fmt.Errorf("the answer cannot be encoded as JSON: %w", err))
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

// decodeBody decodes a JSON request body into v; an empty body leaves v
// as it is.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	err := dec.Decode(v)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return err
	}
	if _, ok := errors.AsType[*problem](err); ok { // a body too slow (bound)
		return err
	}
	return problemf(http.StatusUnprocessableEntity, "the request body is not valid JSON for this endpoint: %v", err)
}
