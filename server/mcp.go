package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
)

// The assistants as Model Context Protocol tools: runner serve mounts
// them at /mcp over streamable HTTP, behind the API's keys (a session
// stays with the principal that opened it); runner mcp serve speaks stdio
// (ServeMCP). Each assistant is one tool, its input schema the
// pipeline's input and its result the declared output. A call runs on a
// thread of its own, or continues the one its thread_id names. A run
// that pauses at an approval gate (or an interrupt whose schema a form
// can fill) asks the client through MCP's input requests (elicitation):
// the request state is a signed token naming the tenant, the thread and
// the interrupts, and the answer resumes that thread, so the approved
// call runs once. A client that cannot answer gets the pending
// approval's id and how to answer it over the API.

// mcpThreadMeta is the _meta key of a result that names its thread.
const mcpThreadMeta = "dev.runner/thread_id"

// mcpState is what a request state token names.
type mcpState struct {
	Tenant     string   `json:"tenant"`
	Thread     string   `json:"thread"`
	Interrupts []string `json:"interrupts"`
}

// mcpEndpoint serves /mcp: one MCP server per principal. A client of
// protocol 2026-07-28 or later is served without sessions (each request
// on its own, a paused run's questions returned as input requests); an
// older one in sessions that carry the principal in their signed ids (the
// server asks it questions on its session).
type mcpEndpoint struct {
	s         *Server
	sessions  *mcp.StreamableHTTPHandler
	stateless *mcp.StreamableHTTPHandler
	mu        sync.Mutex
	servers   map[string]*mcp.Server // principal (principalID) → its server
}

// mcpSessionless is the first protocol version served without sessions.
const mcpSessionless = "2026-07-28"

// mcpSessionTimeout is how long an idle /mcp session lives.
const mcpSessionTimeout = time.Hour

// mcpHandler serves /mcp (the route table has it when Config.MCP is set).
func (s *Server) mcpHandler() http.Handler {
	e := &mcpEndpoint{s: s, servers: map[string]*mcp.Server{}}
	server := func(r *http.Request) *mcp.Server { return e.server(r.Context()) }
	e.sessions = mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{SessionTimeout: mcpSessionTimeout, Logger: s.cfg.Log})
	e.stateless = mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{Stateless: true, Logger: s.cfg.Log})
	return e
}

// ServeHTTP lets a request on a session through only for the principal
// that opened it: another finds no such session.
func (e *mcpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Protocol-Version") >= mcpSessionless {
		e.stateless.ServeHTTP(w, r)
		return
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" && !e.s.mcpSessionOf(id, principalID(principal(r.Context()))) {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	e.sessions.ServeHTTP(w, r)
}

// server returns the MCP server of the request's principal.
func (e *mcpEndpoint) server(ctx context.Context) *mcp.Server {
	p := principal(ctx)
	who := principalID(p)
	e.mu.Lock()
	defer e.mu.Unlock()
	srv := e.servers[who]
	if srv == nil {
		srv = e.s.mcpServer(p, func() string { return e.s.mcpSessionID(who) })
		e.servers[who] = srv
	}
	return srv
}

// principalID names a principal: its tenant, name and roles.
func principalID(p access.Principal) string {
	data, _ := json.Marshal(p)
	return string(data)
}

// ServeMCP serves the assistants as MCP tools over t (stdio, for runner
// mcp serve) for the local principal of the default tenant, until ctx
// ends or the client hangs up.
func (s *Server) ServeMCP(ctx context.Context, t mcp.Transport) error {
	return s.mcpServer(access.Local(), nil).Run(ctx, t)
}

// mcpServer returns an MCP server whose tools are the assistants, run as
// principal p; sessionID names its sessions.
func (s *Server) mcpServer(p access.Principal, sessionID func() string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "runner", Version: s.cfg.Version}, &mcp.ServerOptions{GetSessionID: sessionID,
		Instructions: "Each tool runs one of runner's agents. Pass the thread_id a result names to continue its conversation. " +
			"A run that needs a person's approval asks for it; the approved action runs once."})
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Graphs)) {
		g := s.cfg.Graphs[name]
		srv.AddTool(assistantTool(name, g), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.callAssistant(access.NewContext(ctx, p), name, req)
		})
	}
	return srv
}

// assistantTool is the tool of an assistant: its input schema is the
// pipeline's run input, with thread_id to continue a thread.
func assistantTool(name string, g *runner.Graph) *mcp.Tool {
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	if g.InputSchema != nil {
		schema = maps.Clone(g.InputSchema)
		schema["properties"] = maps.Clone(g.InputSchema["properties"].(map[string]any))
	}
	props := schema["properties"].(map[string]any)
	if _, taken := props["thread_id"]; !taken {
		props["thread_id"] = map[string]any{"type": "string",
			"description": "Continue this thread (a conversation a result named) instead of starting a new one."}
	}
	desc := g.Description
	if desc == "" {
		desc = "Runs the " + name + " assistant."
	}
	return &mcp.Tool{Name: name, Description: desc, InputSchema: schema}
}

// callAssistant runs the assistant for one call: a new run on the call's
// thread (a new one without thread_id), or, with the answers to what the
// run asked, the paused thread resumed with them.
func (s *Server) callAssistant(ctx context.Context, name string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return s.mcpAnswer(ctx, name, req)
	}
	input := map[string]any{}
	if len(req.Params.Arguments) > 0 {
		v, err := runner.DecodeJSON(req.Params.Arguments)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return mcpError("", "the arguments must be a JSON object of the assistant's input"), nil
		}
		input = obj
	}
	thread, _ := input["thread_id"].(string)
	if _, declared := s.cfg.Graphs[name].InputSchema["properties"].(map[string]any)["thread_id"]; !declared {
		delete(input, "thread_id")
	}
	if thread == "" {
		thread = uuid.Must(uuid.NewV7()).String()
	} else if ts, err := s.threadState(ctx, thread); err != nil {
		return mcpError(thread, err.Error()), nil
	} else if ts != nil && ts.Interrupt != nil { // it waits: ask again what it waits for
		return s.mcpPaused(ctx, name, thread, ts.Interrupt, req), nil
	}
	body, _ := json.Marshal(map[string]any{"assistant_id": name, "input": input, "if_not_exists": "create"})
	return s.mcpRun(ctx, name, thread, body, req)
}

// mcpAnswer resumes the thread a request state names with the client's
// answers, unless it no longer waits on those interrupts (another answer
// resumed it): then it says where the thread stands, running nothing.
func (s *Server) mcpAnswer(ctx context.Context, name string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	st, err := s.mcpVerify(req.Params.RequestState, principal(ctx).Tenant)
	if err != nil {
		return mcpError("", err.Error()), nil
	}
	ts, err := s.threadState(ctx, st.Thread)
	if err != nil {
		return mcpError(st.Thread, err.Error()), nil
	}
	if ts == nil || ts.Interrupt == nil || !slices.Equal(leafIDs(ts.Interrupt), st.Interrupts) {
		return s.mcpOutcome(ctx, name, st.Thread, ts), nil
	}
	return s.mcpResume(ctx, name, st.Thread, ts.Interrupt, req.Params.InputResponses, req)
}

// mcpResume resumes thread, paused at intr, with the answers to its
// forms; a form cancelled or not answered leaves it paused.
func (s *Server) mcpResume(ctx context.Context, name, thread string, intr *runner.Interrupt, answers mcp.InputResponseMap,
	req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	value := map[string]any{}
	for _, leaf := range intr.Leaves() {
		res, _ := answers[leaf.ID].(*mcp.ElicitResult)
		v, ok := elicited(leaf, res)
		if !ok {
			return s.mcpPaused(ctx, name, thread, intr, nil), nil
		}
		value[leaf.ID] = v
	}
	var resume any = value
	if len(value) == 1 { // one interrupt's answer: the value itself
		resume = value[intr.ID]
	}
	body, _ := json.Marshal(map[string]any{"assistant_id": name, "command": map[string]any{"resume": resume}})
	return s.mcpRun(ctx, name, thread, body, req)
}

// mcpRun runs body on thread and answers with how the run ended.
func (s *Server) mcpRun(ctx context.Context, name, thread string, body []byte, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	out, err := s.runAndWait(ctx, thread, name, body, "")
	if err != nil {
		return mcpError(thread, asProblem(err).Detail), nil
	}
	if out["status"] == "awaiting_hitl" {
		ts, err := s.threadState(ctx, thread)
		if err != nil || ts == nil || ts.Interrupt == nil {
			return mcpError(thread, fmt.Sprintf("the run paused, but its interrupt cannot be read: %v", err)), nil
		}
		return s.mcpPaused(ctx, name, thread, ts.Interrupt, req), nil
	}
	if e, ok := out["error"]; ok {
		return mcpError(thread, fmt.Sprint(errorMessage(e))), nil
	}
	result := out["output"]
	if result == nil {
		result = out["state"]
	}
	return mcpResult(thread, result), nil
}

// mcpOutcome says where a thread stands: paused, or its last values.
func (s *Server) mcpOutcome(ctx context.Context, name, thread string, ts *runner.ThreadState) *mcp.CallToolResult {
	if ts == nil {
		return mcpError(thread, "the thread has no state")
	}
	if ts.Interrupt != nil {
		return s.mcpPaused(ctx, name, thread, ts.Interrupt, nil)
	}
	g := s.cfg.Graphs[name]
	if g.Output != nil {
		if out, err := g.Output.Eval(map[string]any{"state": ts.State, "input": map[string]any{}, "error": nil}); err == nil {
			return mcpResult(thread, out)
		}
	}
	return mcpResult(thread, outValues(ts.State))
}

// mcpPaused answers a paused run. A client that can fill forms is asked
// to, one form per pending interrupt: one that speaks multi round-trip
// requests gets them as input requests with a signed request state, and
// answers by calling again; an older one is asked here (elicitation), and
// its answers resume the thread at once. Otherwise — the client cannot
// fill forms, an interrupt needs more than a form, or req is nil (the
// client has just been asked) — the answer says what the thread waits on,
// with the interrupts' ids and how to answer over the API.
func (s *Server) mcpPaused(ctx context.Context, name, thread string, intr *runner.Interrupt, req *mcp.CallToolRequest) *mcp.CallToolResult {
	forms := mcp.InputRequestMap{}
	for _, leaf := range intr.Leaves() {
		if schema := elicitSchema(leaf); schema != nil {
			forms[leaf.ID] = &mcp.ElicitParams{Mode: "form", Message: askText(leaf), RequestedSchema: schema}
		}
	}
	if req == nil || !canElicit(req) || len(forms) < len(intr.Leaves()) {
		return mcpWaiting(name, thread, intr)
	}
	if multiRoundTrip(req) {
		token := s.mcpSign(mcpState{Tenant: principal(ctx).Tenant, Thread: thread, Interrupts: leafIDs(intr)})
		return &mcp.CallToolResult{InputRequests: forms, RequestState: token}
	}
	answers := mcp.InputResponseMap{}
	for id, form := range forms {
		res, err := req.Session.Elicit(ctx, form.(*mcp.ElicitParams))
		if err != nil {
			return mcpWaiting(name, thread, intr)
		}
		answers[id] = res
	}
	res, _ := s.mcpResume(ctx, name, thread, intr, answers, req)
	return res
}

// mcpWaiting says what a paused thread waits on and how to answer it.
func mcpWaiting(name, thread string, intr *runner.Interrupt) *mcp.CallToolResult {
	leaves := intr.Leaves()
	pending := make([]any, len(leaves))
	var lines []string
	for i, leaf := range leaves {
		pending[i] = map[string]any{"id": leaf.ID, "kind": leaf.Kind, "rule": leaf.Rule, "message": leaf.Message}
		lines = append(lines, fmt.Sprintf("- %s: %s", leaf.ID, askText(leaf)))
	}
	how := fmt.Sprintf(`POST /threads/%s/runs/wait {"assistant_id": %q, "command": {"resume": {"approved": true}}}`, thread, name)
	text := fmt.Sprintf("The run is paused on thread %s, waiting for a person's answer:\n%s\nAnswer it over runner's API (%s; "+
		"{\"approved\": false, \"message\": \"why\"} rejects), or call this tool again with thread_id %q from a client that can answer forms.",
		thread, strings.Join(lines, "\n"), how, thread)
	return &mcp.CallToolResult{Meta: mcp.Meta{mcpThreadMeta: thread}, Content: []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: map[string]any{"status": "paused", "thread_id": thread, "pending": pending, "resume": how}}
}

// multiRoundTrip reports whether the client speaks multi round-trip
// requests (protocol 2026-07-28 and later): it answers input requests by
// calling again, and is not sent requests of the server's own.
func multiRoundTrip(req *mcp.CallToolRequest) bool {
	if _, ok := req.Params.Meta["io.modelcontextprotocol/protocolVersion"]; ok {
		return true
	}
	p := req.Session.InitializeParams()
	return p == nil || p.ProtocolVersion >= mcpSessionless
}

// canElicit reports whether the calling client can fill forms.
func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil
}

// approvalSchema is the form of an approval gate's answer.
var approvalSchema = map[string]any{"type": "object", "required": []any{"approved"}, "properties": map[string]any{
	"approved": map[string]any{"type": "boolean", "title": "Approve", "description": "Let the action run as proposed."},
	"message":  map[string]any{"type": "string", "title": "Message", "description": "Why, when you reject it (the agent sees it)."},
}}

// elicitSchema is the form an interrupt's answer fills: an approval
// gate's, else its resume schema when a form can hold it (a flat object
// of strings, numbers, booleans and enums); nil when none can.
func elicitSchema(intr *runner.Interrupt) map[string]any {
	if intr.Rule != "" {
		return approvalSchema
	}
	s := intr.ResumeSchema
	props, ok := s["properties"].(map[string]any)
	if s["type"] != "object" || !ok {
		return nil
	}
	for _, p := range props {
		m, _ := p.(map[string]any)
		if t, _ := m["type"].(string); !slices.Contains([]string{"string", "number", "integer", "boolean"}, t) {
			return nil
		}
	}
	return s
}

// elicited is the resume value of an interrupt's answer: the form's
// content when accepted, a rejection when declined; ok is false when the
// client cancelled or gave none.
func elicited(intr *runner.Interrupt, res *mcp.ElicitResult) (any, bool) {
	switch {
	case res == nil || res.Action == "cancel":
		return nil, false
	case res.Action == "decline" && intr.Rule != "":
		return map[string]any{"approved": false, "message": "declined"}, true
	case res.Action == "accept":
		return runner.NormalizeJSON(res.Content), true
	}
	return nil, false
}

// askText is what a form asks.
func askText(intr *runner.Interrupt) string {
	if intr.Message != "" {
		return intr.Message
	}
	if intr.Rule != "" {
		return "Approve the action rule " + intr.Rule + " holds?"
	}
	return "The run waits for your answer at " + intr.Node + "."
}

func leafIDs(intr *runner.Interrupt) []string {
	var ids []string
	for _, l := range intr.Leaves() {
		ids = append(ids, l.ID)
	}
	return ids
}

// threadState is the caller's thread's newest state (nil: it has none, or
// does not exist yet).
func (s *Server) threadState(ctx context.Context, thread string) (*runner.ThreadState, error) {
	rec, err := s.thread(ctx, thread)
	if p, ok := errors.AsType[*problem](err); ok && p.Status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return s.state(ctx, rec, 0)
}

// mcpResult is a finished run's result: the output as structured content
// and as JSON text, and the thread to continue.
func mcpResult(thread string, out any) *mcp.CallToolResult {
	text, _ := runner.MarshalJSON(out)
	res := &mcp.CallToolResult{Meta: mcp.Meta{mcpThreadMeta: thread}, Content: []mcp.Content{&mcp.TextContent{Text: string(text)},
		&mcp.TextContent{Text: "thread_id: " + thread + " (pass it to continue this conversation)"}}}
	if _, ok := out.(map[string]any); ok {
		res.StructuredContent = out
	}
	return res
}

// mcpError is a call that failed: a tool error the model can read.
func mcpError(thread, msg string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
	if thread != "" {
		res.Meta = mcp.Meta{mcpThreadMeta: thread}
	}
	return res
}

func errorMessage(e any) any {
	if m, ok := e.(map[string]any); ok && m["message"] != nil {
		return m["message"]
	}
	return e
}

// mcpSign returns the signed token of st.
func (s *Server) mcpSign(st mcpState) string {
	data, _ := json.Marshal(st)
	payload := base64.RawURLEncoding.EncodeToString(data)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac("state", payload))
}

// mcpVerify reads a token mcpSign made for tenant.
func (s *Server) mcpVerify(token, tenant string) (*mcpState, error) {
	payload, sig, _ := strings.Cut(token, ".")
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac("state", payload)) {
		return nil, errors.New("the answer's request state is not one this server signed; call the tool again with the thread_id")
	}
	data, _ := base64.RawURLEncoding.DecodeString(payload)
	var st mcpState
	if err := json.Unmarshal(data, &st); err != nil || st.Tenant != tenant {
		return nil, errors.New("the answer's request state is not yours")
	}
	return &st, nil
}

// mcpSessionID is a new session id for the principal who: random, and
// signed with who.
func (s *Server) mcpSessionID(who string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	return id + "." + hex.EncodeToString(s.mac("session", who+"|"+id))
}

// mcpSessionOf reports whether session id was made for the principal who.
func (s *Server) mcpSessionOf(id, who string) bool {
	rnd, sig, _ := strings.Cut(id, ".")
	got, err := hex.DecodeString(sig)
	return err == nil && hmac.Equal(got, s.mac("session", who+"|"+rnd))
}

// mac is the HMAC-SHA256 of a purpose and data under the server's key.
func (s *Server) mac(purpose, data string) []byte {
	m := hmac.New(sha256.New, s.mcpKey)
	m.Write([]byte(purpose + "\x00" + data))
	return m.Sum(nil)
}
