package builtins

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

const (
	// maxResponseBytes is the most of a response body an http tool reads.
	maxResponseBytes = 10 << 20
	// errorBodyBytes is how much of a failed response's body an error quotes.
	errorBodyBytes = 200
	// maxRedirects is how many redirects an http tool follows.
	maxRedirects = 10
)

// httpTool calls an HTTP API. The call's deadline comes from its context;
// the transport bounds connecting and waiting for response headers.
type httpTool struct {
	name   string
	def    *dsl.HTTPDef
	client *http.Client
}

// headerWait is how long an http tool waits for a response's headers
// when its own timeout is shorter or unset.
const headerWait = 60 * time.Second

// newHTTPTool builds the tool; timeout is the Tool document's own, which
// the wait for response headers must not cut short (a service that
// answers only when its work is done, as Choregraph's run endpoint does,
// may take the whole of it).
func newHTTPTool(name string, def *dsl.HTTPDef, timeout time.Duration) *httpTool {
	t := &httpTool{name: name, def: def}
	t.client = &http.Client{Transport: newTransport(max(headerWait, timeout)), CheckRedirect: t.checkRedirect}
	return t
}

func newTransport(headerTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: headerTimeout,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
	}
}

// checkRedirect follows a few redirects, and only to allowed hosts.
func (t *httpTool) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return t.def.CheckURL(req.URL)
}

// Call renders the request, sends it and maps the response.
func (t *httpTool) Call(ctx context.Context, call *runner.ToolCall) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := t.begin(call)
	if err != nil {
		return nil, err
	}
	req, err := c.request(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, c.sendError(ctx, req.URL.Host, err)
	}
	defer resp.Body.Close()
	return c.response(ctx, req.URL.Host, resp)
}

// Secrets returns the values of the tool's secrets that are set, for the
// graph's Redactor.
func (t *httpTool) Secrets() []string {
	var out []string
	for _, env := range t.def.Secrets {
		if v, ok := os.LookupEnv(env); ok {
			out = append(out, v)
		}
	}
	return out
}

// httpCall is one call of an httpTool, with the secrets read for it and
// their Redactor, which keeps them (in every encoding) out of the call's
// result and errors.
type httpCall struct {
	*httpTool
	call    *runner.ToolCall
	secrets map[string]any
	redact  *runner.Redactor
}

// begin reads the tool's secrets from the environment.
func (t *httpTool) begin(call *runner.ToolCall) (*httpCall, error) {
	secrets := make(map[string]any, len(t.def.Secrets))
	var values []string
	for name, env := range t.def.Secrets {
		v, ok := os.LookupEnv(env)
		if !ok {
			return nil, runner.Permanent(fmt.Errorf("tool %s: secret %s: environment variable %s is not set", t.name, name, env))
		}
		secrets[name] = v
		values = append(values, v)
	}
	return &httpCall{httpTool: t, call: call, secrets: secrets, redact: runner.NewRedactor(values...)}, nil
}

// request renders the method, URL, headers and body.
func (c *httpCall) request(ctx context.Context) (*http.Request, error) {
	vars := map[string]any{"args": c.call.Args, "secrets": c.secrets}
	raw, err := c.def.URL.Render(vars)
	if err != nil {
		return nil, runner.Permanent(c.errorf("url: %v", err))
	}
	body, err := c.body()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, c.def.Method, raw, body)
	if err != nil {
		return nil, runner.Permanent(c.errorf("%v", err))
	}
	if err := c.def.CheckURL(req.URL); err != nil {
		return nil, runner.Permanent(c.errorf("%v", err))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.call.Key != "" {
		req.Header.Set("Idempotency-Key", c.call.Key)
	}
	for name, tmpl := range c.def.Headers {
		v, err := tmpl.Render(vars)
		if err != nil {
			return nil, runner.Permanent(c.errorf("header %s: %v", name, err))
		}
		req.Header.Set(name, v)
	}
	return req, nil
}

// body evaluates the body expression over the args and encodes it as
// JSON; it returns nil when the tool sends no body.
func (c *httpCall) body() (io.Reader, error) {
	if c.def.Body == nil {
		return nil, nil
	}
	v, err := c.def.Body.Eval(map[string]any{"args": c.call.Args})
	if err != nil {
		return nil, runner.Permanent(c.errorf("body: %v", err))
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, runner.Permanent(c.errorf("body: %v", err))
	}
	return bytes.NewReader(data), nil
}

// sendError describes a request that got no (complete) response. It keeps
// the context's error, so that a deadline reads as a timeout, and leaves
// out the URL, which may hold secrets.
func (c *httpCall) sendError(ctx context.Context, host string, err error) error {
	if he, ok := errors.AsType[*dsl.HostError](err); ok {
		return runner.Permanent(c.errorf("redirect: %v", he))
	}
	if ctx.Err() != nil {
		return c.errorf("request to %s: %w", host, ctx.Err())
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	return c.errorf("request to %s: %v", host, err)
}

// response reads, decodes and maps a response.
func (c *httpCall) response(ctx context.Context, host string, resp *http.Response) (any, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, c.sendError(ctx, host, err)
	}
	if len(data) > maxResponseBytes {
		return nil, c.errorf("response from %s is larger than %d bytes", host, maxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.statusError(host, resp.StatusCode, data)
	}
	body, err := decodeBody(resp.Header.Get("Content-Type"), data)
	if err != nil {
		return nil, c.errorf("response from %s: %v", host, err)
	}
	body = c.redact.Value(body)
	if c.def.Response == nil {
		return body, nil
	}
	v, err := c.def.Response.Eval(map[string]any{"args": c.call.Args, "response": map[string]any{
		"status": resp.StatusCode, "headers": c.headers(resp.Header), "body": body}})
	if err != nil {
		return nil, c.errorf("response: %v", err)
	}
	return v, nil
}

// statusError describes a non-2xx response, quoting the start of its body.
// A client error other than 408 and 429 is permanent.
func (c *httpCall) statusError(host string, status int, body []byte) error {
	quoted := c.redact.String(string(body))
	if len(quoted) > errorBodyBytes {
		quoted = strings.ToValidUTF8(quoted[:errorBodyBytes], "")
	}
	err := error(&runner.HTTPError{Status: status, Err: c.errorf("HTTP %d from %s: %s", status, host, strings.TrimSpace(quoted))})
	if status >= 400 && status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests {
		return runner.Permanent(err)
	}
	return err
}

// headers are the response headers the response mapping sees: lowercased
// names, the first value of each.
func (c *httpCall) headers(h http.Header) map[string]any {
	out := make(map[string]any, len(h))
	for name, vs := range h {
		if len(vs) > 0 {
			out[strings.ToLower(name)] = c.redact.String(vs[0])
		}
	}
	return out
}

// errorf formats an error prefixed by the tool's name, with every secret
// replaced by ***. An error wrapped with %w (a context error) stays
// visible to errors.Is.
func (c *httpCall) errorf(format string, a ...any) error {
	return c.redact.Error(fmt.Errorf("tool %s: "+format, append([]any{c.name}, a...)...))
}

// decodeBody decodes a JSON body (by its Content-Type); any other body is
// returned as a string.
func decodeBody(contentType string, data []byte) (any, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return string(data), nil
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	return runner.DecodeJSON(data)
}
