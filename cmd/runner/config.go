package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/cobra"
	goyaml "go.yaml.in/yaml/v3"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/access"
	"github.com/runner-dev/runner/server"
)

// Config is the project's settings: runner.yaml, then RUNNER_* environment
// variables, then flags, each overriding the one before.
type Config struct {
	// Paths are the files and directories definitions are loaded from.
	Paths []string `koanf:"paths"`
	// Budget overrides every agent's budget field by field
	// (RUNNER_BUDGET_MAX_TOKENS=50000).
	Budget runner.Budget `koanf:"-"`
	// Retention is the history every thread keeps (retention: {keep: 100,
	// max_age: 720h}, RUNNER_RETENTION_KEEP, RUNNER_RETENTION_MAX_AGE):
	// exec prunes a thread after each run, and `threads prune` without
	// flags applies it to every thread.
	Retention runner.Retention `koanf:"-"`
	// RetentionEvery is how often runner serve applies Retention to every
	// thread (retention: {every: 10m}, RUNNER_RETENTION_EVERY; 0: never;
	// default server.DefaultRetentionEvery when Retention is set).
	RetentionEvery time.Duration `koanf:"-"`
	// LeaseTTL is how long a run holds its thread without renewing its
	// lease (lease_ttl: 30s, RUNNER_LEASE_TTL): a thread whose process
	// died can be resumed that long after.
	LeaseTTL time.Duration `koanf:"lease_ttl"`

	// File is the settings file read ("" for none); runner serve reads its
	// serve.api_keys itself (apiKeys), to report a bad key at its line.
	File string `koanf:"-"`

	// Serve holds runner serve's settings.
	Serve ServeConfig `koanf:"serve"`
	// MCP holds the settings of the agents served as MCP tools.
	MCP MCPConfig `koanf:"mcp"`
	// OIDC, when its issuer is set, has runner serve take bearer JWTs of
	// that issuer beside API keys (oidc: {issuer: ..., audience: ...},
	// RUNNER_OIDC_ISSUER).
	OIDC access.OIDC `koanf:"-"`
	// Webhooks are where runner serve sends its notifications: a list of
	// named hooks, or one hook's settings, named default.
	Webhooks []HookConfig `koanf:"-"`
	// WebhooksAllow lets a run's own webhook reach these networks or
	// hosts (webhooks_allow: [10.0.0.0/8, hooks.internal]), closed to it
	// when private.
	WebhooksAllow []string `koanf:"webhooks_allow"`
	// PublicURL is where clients reach runner serve
	// (public_url: https://runner.example.com), for the console links of
	// notifications.
	PublicURL string `koanf:"public_url"`
}

// HookConfig is one hook of runner.yaml's webhooks: the URL told of the
// events it lists (omitted: all), signed with the whsec_ secret held by
// the environment variable SecretEnv (webhooks: [{name: ops, url: ...,
// secret_env: RUNNER_WEBHOOK_SECRET, events: [approval.requested]}]).
type HookConfig struct {
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	SecretEnv string    `json:"secret_env"`
	Events    *[]string `json:"events"`
	// Template makes the body sent: slack, or an expr expression over
	// event, data and link.
	Template string `json:"template"`
}

// hookKeys are the settings of a hook.
var hookKeys = []string{"name", "url", "secret_env", "events", "template"}

// webhooksConfig reads the webhooks of the settings file file (loaded
// in k): a list of hooks, or a map, one hook named default. A setting in
// error is named at its position in file.
func webhooksConfig(k *koanf.Koanf, file string) ([]HookConfig, error) {
	var list []any
	switch v := k.Get("webhooks").(type) {
	case nil:
		return nil, nil
	case map[string]any:
		list = []any{v}
	case []any:
		list = v
	default:
		return nil, fmt.Errorf("webhooks: a list of hooks ({name: ..., url: ..., secret_env: ...}) or one hook's map, not %v", v)
	}
	hooks := make([]HookConfig, len(list))
	for i, h := range list {
		m, ok := h.(map[string]any)
		if !ok {
			return nil, hookAt(file, i, "", fmt.Errorf("webhooks[%d]: a hook is a map ({name: ..., url: ..., secret_env: ...}), not %v", i, h))
		}
		for key := range m {
			if !slices.Contains(hookKeys, key) {
				return nil, hookAt(file, i, key, fmt.Errorf("webhooks[%d]: no setting %q; a hook has %s", i, key, strings.Join(hookKeys, ", ")))
			}
		}
		b, err := json.Marshal(m)
		if err == nil {
			err = json.Unmarshal(b, &hooks[i])
		}
		var bad *json.UnmarshalTypeError
		if errors.As(err, &bad) {
			return nil, hookAt(file, i, bad.Field, fmt.Errorf("webhooks[%d].%s: want %s, not a %s", i, bad.Field, bad.Type, bad.Value))
		}
		if err != nil {
			return nil, fmt.Errorf("webhooks[%d]: %w", i, err)
		}
	}
	if _, one := k.Get("webhooks").(map[string]any); one && hooks[0].Name == "" {
		hooks[0].Name = "default"
	}
	return hooks, nil
}

// webhooks is the server's webhooks of hooks, read from the settings
// file file: each secret read from its variable, each template compiled.
func webhooks(file string, hooks []HookConfig) (server.Webhooks, error) {
	var w server.Webhooks
	for i, c := range hooks {
		if c.Name == "" {
			return w, hookAt(file, i, "", fmt.Errorf("webhooks[%d]: no name; give each hook a name (name: ops)", i))
		}
		h := server.Hook{Name: c.Name, URL: c.URL, Events: server.WebhookEvents}
		if c.Events != nil {
			h.Events = *c.Events
		}
		if c.SecretEnv == "" {
			return w, hookAt(file, i, "", fmt.Errorf("webhooks %s: no secret_env; name the environment variable that holds its whsec_ secret", c.Name))
		}
		v := os.Getenv(c.SecretEnv)
		if v == "" {
			return w, hookAt(file, i, "secret_env", fmt.Errorf("webhooks %s: secret_env names %s, which is not set; set it to a whsec_ secret", c.Name, c.SecretEnv))
		}
		var err error
		if h.Secret, err = server.ParseWebhookSecret(v); err != nil {
			return w, hookAt(file, i, "secret_env", fmt.Errorf("webhooks %s: %s: %w", c.Name, c.SecretEnv, err))
		}
		if h.Template, err = hookTemplate(file, i, c.Template); err != nil {
			return w, fmt.Errorf("webhooks %s: template: %w", c.Name, err)
		}
		w.Hooks = append(w.Hooks, h)
	}
	return w, nil
}

// hookNames are the names of hooks.
func hookNames(hooks []HookConfig) []string {
	names := make([]string, len(hooks))
	for i, h := range hooks {
		names[i] = h.Name
	}
	return names
}

// templateEnv is what a hook's template expression reads: the event,
// its data, and the console's link to its thread ("" without
// public_url).
var templateEnv = dsl.NewEnv(map[string]*dsl.Type{"event": dsl.StringType, "data": dsl.AnyType, "link": dsl.StringType})

// hookTemplate is the template of the i-th hook of the settings file:
// none, the built-in slack, or an expr expression, compiled with its
// position in file.
func hookTemplate(file string, i int, src string) (server.Template, error) {
	switch src {
	case "":
		return nil, nil
	case "slack":
		return server.SlackTemplate, nil
	}
	text, _ := os.ReadFile(file)
	prog, diags := dsl.Compile(dsl.Source{Text: src, Lang: dsl.Expr, File: file, Node: settingNode(text, i, "template"), Src: text},
		templateEnv, nil)
	if diags.HasErrors(false) {
		return nil, diags.Err()
	}
	return func(event string, data map[string]any, link string) (any, error) {
		return prog.Eval(map[string]any{"event": event, "data": data, "link": link})
	}, nil
}

// hookAt puts before err the position in the settings file file of the
// setting key of its i-th hook (of the hook itself when key is ""), when
// it is found there.
func hookAt(file string, i int, key string, err error) error {
	text, _ := os.ReadFile(file)
	n := hookNode(text, i)
	if key != "" {
		n = mapValue(n, key)
	}
	if file == "" || n == nil || n.Line == 0 {
		return err
	}
	return fmt.Errorf("%s:%d:%d: %w", file, n.Line, n.Column, err)
}

// settingNode is the YAML node of the setting key of the i-th hook of
// the settings file text, for positions; a bare node where it is not
// found.
func settingNode(text []byte, i int, key string) *goyaml.Node {
	if v := mapValue(hookNode(text, i), key); v != nil {
		return v
	}
	return &goyaml.Node{Kind: goyaml.ScalarNode}
}

// hookNode is the YAML node of the i-th hook of the settings file text
// (the webhooks map, when it is one hook), nil where there is none.
func hookNode(text []byte, i int) *goyaml.Node {
	var doc goyaml.Node
	if goyaml.Unmarshal(text, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	hook := mapValue(doc.Content[0], "webhooks")
	if hook != nil && hook.Kind == goyaml.SequenceNode {
		if i >= len(hook.Content) {
			return nil
		}
		hook = hook.Content[i]
	}
	return hook
}

// mapValue is the value of key in the mapping node m, nil if none.
func mapValue(m *goyaml.Node, key string) *goyaml.Node {
	if m == nil || m.Kind != goyaml.MappingNode {
		return nil
	}
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			return m.Content[j+1]
		}
	}
	return nil
}

// MCPConfig is the mcp section of runner.yaml.
type MCPConfig struct {
	// Enabled mounts the agents as MCP tools at runner serve's /mcp
	// (mcp: {enabled: false}, RUNNER_MCP_ENABLED=false to leave it off;
	// default on).
	Enabled bool `koanf:"enabled"`
}

// ServeConfig is the serve section of runner.yaml.
type ServeConfig struct {
	// Limits bound connections, requests and streams (serve:
	// {read_timeout: 30s, max_streams: 5000}, RUNNER_SERVE_READ_TIMEOUT);
	// the flags of the same names override them.
	Limits server.Limits `koanf:"-"`
}

// defaultPaths are loaded when no runner.yaml names others.
var defaultPaths = []string{"pipelines", "agents", "rules"}

// loadConfig reads the settings for cmd.
func loadConfig(cmd *cobra.Command) (*Config, error) {
	k := koanf.New(".")
	base := "" // the settings file's directory, which its paths are relative to
	name, _ := cmd.Flags().GetString("config")
	if name == "" {
		name = "runner.yaml"
		if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
			name = ""
		}
	}
	if name != "" {
		if err := k.Load(file.Provider(name), yaml.Parser()); err != nil {
			return nil, err
		}
		base = filepath.Dir(name)
		if k.Exists("paths") {
			if err := k.Set("paths", relativeTo(base, k.Strings("paths"))); err != nil {
				return nil, err
			}
		}
	}
	err := k.Load(env.Provider(".", env.Opt{Prefix: "RUNNER_", TransformFunc: func(key, v string) (string, any) {
		key = strings.ToLower(strings.TrimPrefix(key, "RUNNER_"))
		if key == "paths" {
			return key, strings.Split(v, ",")
		}
		for _, section := range []string{"budget", "retention", "serve", "mcp", "oidc"} {
			if field, ok := strings.CutPrefix(key, section+"_"); ok {
				return section + "." + field, v
			}
		}
		return key, v
	}}), nil)
	if err != nil {
		return nil, err
	}
	if err := k.Load(posflag.Provider(cmd.Flags(), ".", k), nil); err != nil {
		return nil, err
	}
	cfg := &Config{File: name, MCP: MCPConfig{Enabled: true}}
	if err := k.Unmarshal("", cfg); err != nil {
		return nil, err
	}
	if err := k.UnmarshalWithConf("budget", &cfg.Budget, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
		return nil, fmt.Errorf("budget settings: %w", err)
	}
	if err := k.UnmarshalWithConf("retention", &cfg.Retention, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
		return nil, fmt.Errorf("retention settings: %w", err)
	}
	if err := k.UnmarshalWithConf("serve", &cfg.Serve.Limits, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
		return nil, fmt.Errorf("serve settings: %w", err)
	}
	if cfg.Webhooks, err = webhooksConfig(k, name); err != nil {
		return nil, err
	}
	if cfg.OIDC, err = oidcSettings(k); err != nil {
		return nil, err
	}
	if cfg.RetentionEvery, err = retentionEvery(k, cfg.Retention); err != nil {
		return nil, err
	}
	if len(cfg.Paths) == 0 {
		cfg.Paths = existing(relativeTo(base, defaultPaths))
	}
	return cfg, nil
}

// oidcSettings reads the oidc section of k; a setting it does not know
// is an error naming those it does.
func oidcSettings(k *koanf.Koanf) (access.OIDC, error) {
	var o access.OIDC
	known := []string{"issuer", "audience", "tenant_claim", "principal_claim", "roles_claim", "tenant"}
	for _, key := range k.Cut("oidc").Keys() {
		if !slices.Contains(known, key) {
			return o, fmt.Errorf("oidc settings: unknown setting %q: the settings are %s", key, strings.Join(known, ", "))
		}
	}
	if err := k.UnmarshalWithConf("oidc", &o, koanf.UnmarshalConf{Tag: "yaml"}); err != nil {
		return o, fmt.Errorf("oidc settings: %w", err)
	}
	return o, nil
}

// retentionEvery is the interval of retention.every in k; without one,
// server.DefaultRetentionEvery when ret sets a policy, else 0.
func retentionEvery(k *koanf.Koanf, ret runner.Retention) (time.Duration, error) {
	if !k.Exists("retention.every") {
		if ret == (runner.Retention{}) {
			return 0, nil
		}
		return server.DefaultRetentionEvery, nil
	}
	d, err := time.ParseDuration(k.String("retention.every"))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("retention settings: every: %q is not a duration (10m, 1h; 0: no sweep)", k.String("retention.every"))
	}
	return d, nil
}

// relativeTo resolves the relative paths of a settings file against its
// directory dir, so a project's runner.yaml means the same files from any
// working directory.
func relativeTo(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p
		if !filepath.IsAbs(p) {
			out[i] = filepath.Join(dir, p)
		}
	}
	return out
}

// existing returns the paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// loadProject loads and checks the definitions at paths.
func loadProject(paths []string) (*dsl.Checker, *dsl.Project, []*dsl.Document, dsl.Diagnostics, error) {
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		return nil, nil, nil, nil, err
	}
	docs, diags := dsl.Load(paths...)
	proj, more := checker.Check(docs)
	return checker, proj, docs, append(diags, more...).Sorted(), nil
}

// checkedProject is loadProject for commands that need valid definitions:
// it reports the diagnostics on stderr and fails when any is an error.
func checkedProject(cmd *cobra.Command, paths []string) (*dsl.Checker, *dsl.Project, error) {
	checker, proj, docs, diags, err := loadProject(paths)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	if diags.HasErrors(false) {
		_ = dsl.WriteReport(cmd.ErrOrStderr(), diags, dsl.FormatText, sources(docs))
		return nil, nil, usageErr(errors.New("definitions are invalid; run runner validate"))
	}
	return checker, proj, nil
}
