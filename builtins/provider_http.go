package builtins

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/runner"
)

const (
	// responseBodyMax bounds a response body, and each line and event of a
	// stream, read into memory: far above any reply, it keeps a broken
	// server from exhausting memory.
	responseBodyMax = 32 << 20
	// errorBodyMax bounds the error response body read for its message.
	errorBodyMax = 64 << 10
	// errorQuoteMax bounds the start of an error body quoted in an error
	// when the body has no message.
	errorQuoteMax = 200
)

// apiClient posts JSON requests to one endpoint of an LLM API: the HTTP
// plumbing the providers share. It does not retry (the calling node's
// retry policy does) and reads no environment variables.
type apiClient struct {
	provider string      // the provider's name in errors
	url      string      // the endpoint
	header   http.Header // sent with every request
	client   *http.Client
	key      string
	redact   *runner.Redactor // hides the API key in errors
	// message is the server's message in an error body, or "".
	message func(body []byte) string
}

// newAPIClient returns a client for provider posting to path under
// e.BaseURL (defaultBase when empty) with header, and reading the
// server's message in an error body with message.
func newAPIClient(provider string, e Endpoint, defaultBase, path string, header http.Header, message func([]byte) string) *apiClient {
	header.Set("Content-Type", "application/json")
	header.Set("Accept", "application/json")
	return &apiClient{
		provider: provider,
		url:      strings.TrimSuffix(cmp.Or(e.BaseURL, defaultBase), "/") + path,
		header:   header,
		client:   cmp.Or(e.Client, http.DefaultClient),
		key:      e.APIKey,
		redact:   runner.NewRedactor(e.APIKey),
		message:  message,
	}
}

// Secrets returns the API key, for the graph's Redactor.
func (c *apiClient) Secrets() []string { return []string{c.key} }

// post sends body, a JSON request, and returns the response for the
// caller to read and close. A response with an error status is a
// *statusError.
func (c *apiClient) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = c.header.Clone()
	res, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 400 {
		defer res.Body.Close()
		return nil, c.errorResponse(res)
	}
	return res, nil
}

// statusError is a response with an error status: the status, the wait
// it asks for and the server's message.
type statusError struct {
	status     int
	retryAfter time.Duration
	msg        string
}

// Error is the server's message.
func (e *statusError) Error() string { return e.msg }

// errorResponse reads res, a response with an error status. A body that
// cannot be read whole is not quoted: the status text stands in for it.
func (c *apiClient) errorResponse(res *http.Response) error {
	raw, err := io.ReadAll(io.LimitReader(res.Body, errorBodyMax))
	if err != nil {
		raw = nil
	}
	return &statusError{
		status:     res.StatusCode,
		retryAfter: retryAfter(res.Header),
		msg:        cmp.Or(c.errorText(raw), http.StatusText(res.StatusCode)),
	}
}

// retryAfter reads the wait a response asks for: Retry-After-Ms (OpenAI's),
// else Retry-After in seconds or as an HTTP date; 0 when absent.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.Atoi(h.Get("Retry-After-Ms")); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	v := h.Get("Retry-After")
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// errorText is the server's message in an error body, else the start of
// the body, else "".
func (c *apiClient) errorText(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if msg := c.message(raw); msg != "" {
		return msg
	}
	return fmt.Sprintf("%.*s", errorQuoteMax, raw)
}

// call posts body and decodes the JSON reply into v.
func (c *apiClient) call(ctx context.Context, body []byte, v any) error {
	res, err := c.post(ctx, body)
	if err != nil {
		return err
	}
	return readJSON(res, v)
}

// events posts body and yields the server-sent events of the reply until
// the first error, which ends them: the post's, a read's, or an error
// event's (the server's message). The reply is closed when the loop ends.
func (c *apiClient) events(ctx context.Context, body []byte) iter.Seq2[sseEvent, error] {
	return func(yield func(sseEvent, error) bool) {
		res, err := c.post(ctx, body)
		if err != nil {
			yield(sseEvent{}, err)
			return
		}
		defer res.Body.Close()
		for ev, err := range sseEvents(res.Body) {
			switch {
			case err != nil:
				yield(sseEvent{}, fmt.Errorf("stream: %w", err))
				return
			case ev.name == "error":
				yield(sseEvent{}, c.streamError(ev.data))
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// streamError is the error an error event in a stream reports, from the
// event's data.
func (c *apiClient) streamError(data []byte) error {
	return fmt.Errorf("stream error: %s", cmp.Or(c.errorText(data), "no message"))
}

// invalid is the error for a request that cannot be built: permanent,
// since sending it again cannot help.
func (c *apiClient) invalid(model string, err error) error {
	return runner.Permanent(&runner.ProviderError{Provider: c.provider, Model: model, Err: err})
}

// fail wraps err, a failed call to model, in a ProviderError with the API
// key redacted. An error status keeps its status, Retry-After and the
// server's message, and classify makes a 4xx other than 408, 409 and 429
// permanent; any other error (a connection error, a malformed or
// truncated body, an error inside a stream) has no status and is retried.
func (c *apiClient) fail(model string, err error) error {
	pe := &runner.ProviderError{Provider: c.provider, Model: model, Err: c.redact.Wrap(err.Error(), err)}
	if se, ok := errors.AsType[*statusError](err); ok {
		pe.Status, pe.RetryAfter = se.status, se.retryAfter
	}
	return classify(pe)
}

// encodeJSON encodes a request body, leaving <, > and & as they are
// rather than escaping them (prompts are full of them).
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// readJSON decodes the JSON body of res, of at most responseBodyMax
// bytes, into v and closes it.
func readJSON(res *http.Response, v any) error {
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, responseBodyMax+1))
	if err != nil {
		return fmt.Errorf("error reading response body: %w", err)
	}
	if len(raw) > responseBodyMax {
		return fmt.Errorf("response body exceeds %d bytes", responseBodyMax)
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(v); err != nil {
		return fmt.Errorf("error parsing response json: %w", err)
	}
	return nil
}

// sseEvent is one server-sent event: its name (its event field, "" when
// it has none) and its data (its data lines, joined by newlines).
type sseEvent struct {
	name string
	data []byte
}

// sseEvents reads the server-sent events of r. Lines end with LF or
// CRLF; a blank line ends an event, which is yielded if it has a data
// line; comments and fields other than event and data are skipped. A
// read error, or a line or event longer than responseBodyMax, is yielded
// as an error and ends the sequence; at the end of r, an event without
// its closing blank line was cut short and is dropped.
func sseEvents(r io.Reader) iter.Seq2[sseEvent, error] {
	return func(yield func(sseEvent, error) bool) {
		scan := bufio.NewScanner(r)
		scan.Buffer(nil, responseBodyMax)
		var ev sseEvent
		hasData := false
		for scan.Scan() {
			line := scan.Bytes()
			if len(line) == 0 {
				if hasData && !yield(ev, nil) {
					return
				}
				ev, hasData = sseEvent{}, false
				continue
			}
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				ev.name = string(value)
			case "data":
				if hasData {
					ev.data = append(ev.data, '\n')
				}
				ev.data, hasData = append(ev.data, value...), true
			}
			if len(ev.data) > responseBodyMax {
				yield(sseEvent{}, fmt.Errorf("event exceeds %d bytes", responseBodyMax))
				return
			}
		}
		if err := scan.Err(); errors.Is(err, bufio.ErrTooLong) {
			yield(sseEvent{}, fmt.Errorf("line exceeds %d bytes", responseBodyMax))
		} else if err != nil {
			yield(sseEvent{}, err)
		}
	}
}
