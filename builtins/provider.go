package builtins

import (
	"fmt"
	"net/http"
	"os"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// Endpoint is where a provider sends its requests. APIKey is the key
// itself, read from the model's api_key_env; it is sent in a header and
// never appears in errors, events or checkpoints.
type Endpoint struct {
	BaseURL string
	APIKey  string
	// Client is the HTTP client (default http.DefaultClient).
	Client *http.Client
}

// ScriptedProviders returns a provider factory under which every model
// answers from script (exec --script, Test documents), so an agent runs
// without an API key; an empty script makes every LLM call fail.
func ScriptedProviders(script []dsl.Reply) func(*dsl.ModelDef) (runner.Provider, error) {
	p := Scripted(script)
	return func(*dsl.ModelDef) (runner.Provider, error) { return p, nil }
}

// Providers returns the compiler's provider factory: each model calls its
// provider, with the key from its api_key_env.
func Providers() func(*dsl.ModelDef) (runner.Provider, error) {
	return func(m *dsl.ModelDef) (runner.Provider, error) {
		if m.Provider == "scripted" {
			return nil, fmt.Errorf("model %s is scripted: give its replies with --script FILE (exec) or script: (Test)", m.Name)
		}
		e := Endpoint{BaseURL: m.BaseURL}
		if m.APIKeyEnv != "" {
			if e.APIKey = os.Getenv(m.APIKeyEnv); e.APIKey == "" {
				return nil, fmt.Errorf("model %s: environment variable %s is not set; set it to the %s API key, or run with --script FILE for scripted replies",
					m.Name, m.APIKeyEnv, m.Provider)
			}
		}
		for _, k := range ProviderKinds {
			if k.Key == m.Provider {
				return k.New(e), nil
			}
		}
		return nil, fmt.Errorf("model %s: unknown provider %q", m.Name, m.Provider)
	}
}

// ProviderKind is an LLM API a Model document's provider: names.
type ProviderKind struct {
	Key string
	Doc string
	New func(Endpoint) runner.Provider
}

// ProviderKinds are the providers that call a service, one spec each;
// scripted models answer from a script instead (ScriptedProviders).
var ProviderKinds = []ProviderKind{
	{Key: "openai", Doc: "any OpenAI-compatible Chat Completions server", New: NewOpenAI},
	{Key: "anthropic", Doc: "Anthropic's Messages API", New: NewAnthropic},
}

// classify marks provider errors that retrying cannot fix — client errors
// other than 408, 409 and 429 — as permanent.
func classify(pe *runner.ProviderError) error {
	switch s := pe.Status; {
	case s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests:
		return pe
	case s >= 400 && s < 500:
		return runner.Permanent(pe)
	}
	return pe
}
