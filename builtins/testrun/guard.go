package testrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// errRefused ends a Test's run at a call the Test does not answer.
var errRefused = errors.New("runner test: a call the Test does not answer")

// liveGuard keeps a Test inside the process: an unmocked tool of an
// external kind (http: a service, called with real secrets) and a model
// call past the end of the Test's script are refused, the Test fails
// naming them, and its run is cancelled — unless the Test runs --live,
// when they go to the real service and the real model.
type liveGuard struct {
	test    *dsl.TestDef
	live    bool
	tools   *builtins.Toolbox // builds the live tools
	cancel  context.CancelCauseFunc
	mu      sync.Mutex
	refused []string
}

// tool is the compiler's tool builder for the Test: the Toolbox's, or a
// refusal for a tool of an external kind.
func (g *liveGuard) tool(def *dsl.ToolDef) (runner.Tool, error) {
	k := builtins.KindOf(def)
	if g.live || k == nil || !k.External {
		return g.tools.Tool(def)
	}
	return builtins.Checked(def, runner.ToolFunc(func(context.Context, *runner.ToolCall) (any, error) {
		return nil, g.refuse(fmt.Sprintf("%s tool %s was called, but the Test does not mock it; "+
			"mock it under mocks: (%s: {result: ...} or {error: ...}), or run runner test --live to call it for real",
			k.Key, def.Name, def.Name))
	}))
}

// providers is the compiler's model factory for a run of the Test:
// every model answers from the run's script; a call past its end goes to
// the model's real provider with --live, and is refused without.
func (g *liveGuard) providers(replies []dsl.Reply) func(*dsl.ModelDef) (runner.Provider, error) {
	script := builtins.Scripted(replies)
	real := builtins.Providers()
	return func(m *dsl.ModelDef) (runner.Provider, error) {
		return &testModel{guard: g, def: m, script: script, replies: len(replies), real: real}, nil
	}
}

// refuse records a refused call, cancels the run and returns the error
// the call fails with.
func (g *liveGuard) refuse(msg string) error {
	g.mu.Lock()
	g.refused = append(g.refused, msg)
	g.mu.Unlock()
	g.cancel(errRefused)
	return runner.Permanent(fmt.Errorf("%w: %s", errRefused, msg))
}

// problems are the refused calls, one line each.
func (g *liveGuard) problems() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.refused...)
}

// testModel is a model in a Test: its script, then (--live) its provider.
type testModel struct {
	guard   *liveGuard
	def     *dsl.ModelDef
	script  runner.Provider
	replies int
	real    func(*dsl.ModelDef) (runner.Provider, error)

	once     sync.Once
	provider runner.Provider
	err      error
}

// Chat answers call n from the script while it lasts.
func (m *testModel) Chat(ctx context.Context, req *runner.ChatRequest) (*runner.ChatResponse, error) {
	if req.Call < m.replies {
		return m.script.Chat(ctx, req)
	}
	if !m.guard.live {
		return nil, m.guard.refuse(fmt.Sprintf("model %s was called by node %s (LLM call %d), but the Test's script has %d replies; "+
			"add replies to script: (an {error: {status: 503, message: ...}} reply tests a model that is down), "+
			"or run runner test --live to call the model for real", m.def.Name, req.Node, req.Call+1, m.replies))
	}
	m.once.Do(func() { m.provider, m.err = m.real(m.def) })
	if m.err != nil {
		return nil, runner.Permanent(m.err)
	}
	return m.provider.Chat(ctx, req)
}

// Secrets returns the model's API key when the Test may call it for real,
// for the graph's Redactor.
func (m *testModel) Secrets() []string {
	if !m.guard.live || m.def.APIKeyEnv == "" {
		return nil
	}
	return []string{os.Getenv(m.def.APIKeyEnv)}
}
