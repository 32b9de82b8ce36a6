package builtins_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runner-dev/runner/runner"
)

const greeter = `
apiVersion: runner/v1
kind: Pipeline
metadata: {name: greeter}
configurable:
  tone: {type: string, enum: [formal, casual], default: casual}
  sign_off: {type: string, default: "Cheers"}
state:
  reply: {type: string, default: ""}
start: greet
nodes:
  greet:
    type: set
    with:
      reply: '(config.tone == "formal" ? "Good day." : "Hi!") + " " + config.sign_off'
    next: END
`

// TestConfigurableParameters: a pipeline's expressions read its
// configurable parameters as config: a run's values over the defaults; a
// value that does not fit, or a name that is no parameter, is refused
// before the thread exists.
func TestConfigurableParameters(t *testing.T) {
	g := compile(t, greeter, "greeter", nil)
	e := engine(t)
	for _, c := range []struct {
		config map[string]any
		want   string
	}{
		{nil, "Hi! Cheers"},
		{map[string]any{"tone": "formal"}, "Good day. Cheers"},
		{map[string]any{"tone": "formal", "sign_off": "Regards"}, "Good day. Regards"},
	} {
		res, err := e.RunWith(context.Background(), g, "t-"+c.want, nil, runner.RunOptions{Config: c.config})
		if err != nil || res.State["reply"] != c.want {
			t.Errorf("config %v: %v, %v; want reply %q", c.config, res, err, c.want)
		}
	}
	for _, bad := range []map[string]any{{"tone": "loud"}, {"sign_off": 3}, {"mood": "glum"}} {
		if _, err := e.RunWith(context.Background(), g, "bad", nil, runner.RunOptions{Config: bad}); !errors.Is(err, runner.ErrInput) {
			t.Errorf("config %v: %v, want ErrInput", bad, err)
		}
	}
	if _, err := e.Store.Load(context.Background(), "bad", 0); err == nil {
		t.Error("a refused config left a thread")
	}
}
