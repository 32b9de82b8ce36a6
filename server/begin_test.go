package server

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/runner"
	"github.com/runner-dev/runner/runner/store/sqlite"
)

// startedNode signals each time it runs.
type startedNode chan struct{}

func (n startedNode) Run(context.Context, *runner.Input) (runner.Update, error) {
	n <- struct{}{}
	return nil, nil
}

// TestStreamStartsItsRun: a run created with its stream does not start
// until the stream has written its metadata event (id 1), which the
// stream writes from memory; then it starts.
func TestStreamStartsItsRun(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	started := make(startedNode, 1)
	g := &runner.Graph{Name: "g", Start: "a", MaxSteps: 5, Fields: map[string]runner.Field{},
		Nodes: map[string]*runner.Step{"a": {Name: "a", Node: started, Routes: []runner.Route{{To: runner.End}}}}}
	s, err := New(context.Background(), Config{Store: st, NoAuth: true, Graphs: map[string]*runner.Graph{"g": g}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	req := httptest.NewRequest("POST", "/threads/t1/runs/stream", strings.NewReader(`{"assistant_id": "g", "if_not_exists": "create"}`))
	req.SetPathValue("thread", "t1")
	_, l, err := s.createRun(req, streamed)
	if err != nil || l == nil {
		t.Fatalf("createRun = %v, %v", l, err)
	}
	select {
	case <-started:
		t.Fatal("the run started before its stream wrote its first event")
	case <-time.After(100 * time.Millisecond):
	}
	w := httptest.NewRecorder()
	sw := s.openStream(w)
	defer sw.close()
	if after := s.begin(sw, l); after != 1 || !strings.HasPrefix(w.Body.String(), "id: 1\nevent: metadata\ndata: {") {
		t.Errorf("begin = %d, wrote %q; want the metadata event, id 1", after, w.Body.String())
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not start once its stream wrote its first event")
	}
	l.streams.Done()
	l.detach()
}
