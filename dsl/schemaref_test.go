package dsl_test

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/dsl"
)

// TestCompileJSONSchemaRefsInside: references to the schema itself and to
// runner's embedded schemas resolve; "$ref" as a property name or as data
// is no reference.
func TestCompileJSONSchemaRefsInside(t *testing.T) {
	doc := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"local":    map[string]any{"$ref": "#/$defs/word"},
			"timeout":  map[string]any{"$ref": dsl.EmbeddedSchemas + "defs.json#/$defs/duration"},
			"$ref":     map[string]any{"enum": []any{map[string]any{"$ref": "file:///etc/passwd"}}},
			"examples": map[string]any{"default": map[string]any{"$ref": "/etc/passwd"}},
		},
		"$defs": map[string]any{"word": map[string]any{"type": "string", "pattern": "^[a-z]+$"}},
	}
	s, err := dsl.CompileJSONSchema(doc)
	if err != nil {
		t.Fatalf("CompileJSONSchema: %v", err)
	}
	tests := []struct {
		name  string
		value map[string]any
		want  string // "" valid, else a substring of the error
	}{
		{"both refs hold", map[string]any{"local": "abc", "timeout": "10s"}, ""},
		{"local ref applies", map[string]any{"local": "ABC"}, "/local"},
		{"embedded ref applies", map[string]any{"timeout": "ten seconds"}, "/timeout"},
		{"a property called $ref is data", map[string]any{"$ref": map[string]any{"$ref": "file:///etc/passwd"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Check(tt.value)
			if got := errString(err); tt.want == "" && err != nil || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("Check(%v) = %q, want %q", tt.value, got, tt.want)
			}
		})
	}
}

// TestCompileJSONSchemaRefusesOutside: the compiler's loader refuses files,
// paths and URLs without reading them, even when the checker is bypassed.
func TestCompileJSONSchemaRefusesOutside(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type": "string"}`))
	}))
	defer srv.Close()
	tests := []struct {
		name string
		doc  map[string]any
		want string
	}{
		{"file url", map[string]any{"$ref": "file://" + file}, "refers to a file"},
		{"absolute path", map[string]any{"$ref": file}, "not allowed"},
		{"relative path", map[string]any{"$ref": "s.json"}, "not allowed"},
		{"proc", map[string]any{"$ref": "file:///proc/self/environ"}, "refers to a file"},
		{"network", map[string]any{"$ref": srv.URL + "/s.json"}, "refers to the network"},
		{"meta-schema from a file", map[string]any{"$schema": "file://" + file}, "refers to a file"},
		{"nested", map[string]any{"items": map[string]any{"$ref": "file://" + file}}, "refers to a file"},
		{"embedded path escape", map[string]any{"$ref": dsl.EmbeddedSchemas + "../../etc/passwd"}, "no embedded schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dsl.CompileJSONSchema(tt.doc)
			var re *dsl.RefError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CompileJSONSchema(%v) = %v, want a RefError containing %q", tt.doc, err, tt.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schema server got %d requests, want 0", n)
	}
}

// TestSchemaRefFIFO: a reference to a FIFO returns at once (opening one
// blocks until a writer comes) from both validate and the compiler.
func TestSchemaRefFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	def := filepath.Join(dir, "tool.yaml")
	src := "apiVersion: runner/v1\nkind: Tool\nmetadata: {name: t}\nparameters:\n  type: object\n" +
		"  properties:\n    a: {$ref: \"file://" + fifo + "\"}\n    b: {$ref: \"" + fifo + "\"}\nexpr: \"1\"\n"
	if err := os.WriteFile(def, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newChecker(t)
	tests := []struct {
		name string
		run  func() string
		want string
	}{
		{"validate", func() string {
			docs, diags := dsl.Load(def)
			_, more := c.Check(docs)
			return list(append(diags, more...))
		}, `tool.yaml:7:15: error: $ref "file://` + fifo + `" is not allowed`},
		{"compile file url", func() string {
			_, err := dsl.CompileJSONSchema(map[string]any{"$ref": "file://" + fifo})
			return errString(err)
		}, "refers to a file"},
		{"compile path", func() string {
			_, err := dsl.CompileJSONSchema(map[string]any{"$ref": fifo})
			return errString(err)
		}, "not allowed"},
		{"compile meta-schema", func() string {
			_, err := dsl.CompileJSONSchema(map[string]any{"$schema": "file://" + fifo})
			return errString(err)
		}, "refers to a file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan string, 1)
			go func() { done <- tt.run() }()
			select {
			case got := <-done:
				if !strings.Contains(got, tt.want) {
					t.Errorf("got %q, want %q", got, tt.want)
				}
			case <-time.After(5 * time.Second):
				unblockFIFO(fifo)
				t.Fatal("still running after 5s: the FIFO was opened")
			}
		})
	}
}

// unblockFIFO opens the FIFO for writing, so that a reader stuck in open
// returns and the test process can end.
func unblockFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		_ = f.Close()
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestCheckTakesGoValues: Check judges a value the same whether it holds
// decoded JSON (json.Number), Go's own numbers, or types only JSON
// turns into the schema's (typed slices and maps, structs); a NaN is
// refused, not validated.
func TestCheckTakesGoValues(t *testing.T) {
	s, err := dsl.CompileJSONSchema(map[string]any{
		"type":     "object",
		"required": []any{"n"},
		"properties": map[string]any{
			"n":    map[string]any{"type": "integer", "minimum": 1},
			"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"at":   map[string]any{"type": "object", "required": []any{"x"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		value any
		want  string // "" valid, else a substring of the error
	}{
		{"json.Number", map[string]any{"n": json.Number("3")}, ""},
		{"int", map[string]any{"n": 3}, ""},
		{"int64 below the minimum", map[string]any{"n": int64(0)}, "/n"},
		{"whole float64", map[string]any{"n": 3.0}, ""},
		{"fractional float64", map[string]any{"n": 2.5}, "/n"},
		{"[]string", map[string]any{"n": 1, "tags": []string{"a", "b"}}, ""},
		{"[]int where strings go", map[string]any{"n": 1, "tags": []int{1}}, "/tags/0"},
		{"a struct", map[string]any{"n": 1, "at": struct{ X int }{1}}, "/at"},
		{"map[string]string", map[string]string{"n": "1"}, "/n"},
		{"NaN", map[string]any{"n": math.NaN()}, "NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Check(tt.value)
			if got := errString(err); tt.want == "" && err != nil || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("Check(%v) = %q, want %q", tt.value, got, tt.want)
			}
		})
	}
}
