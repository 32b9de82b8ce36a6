package stores

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, url, wantErr string
	}{
		{"memory", "memory:", ""},
		{"sqlite", "sqlite:" + filepath.Join(dir, "x", "a.db"), ""},
		{"sqlite with options", "sqlite:" + filepath.Join(dir, "b.db") + "?sync=full", ""},
		{"no scheme", "runner.db", "no scheme; want memory:, sqlite:PATH or postgres://HOST/DB"},
		{"unknown scheme", "mysql://x", `unknown scheme "mysql"`},
		{"memory with a path", "memory:x", "takes no path"},
		{"sqlite without a path", "sqlite:", "needs a path"},
		{"postgres, no server", "postgres://u@127.0.0.1:1/db?connect_timeout=2", "store: postgres u@127.0.0.1:1/db"},
		{"postgresql, no server", "postgresql://u@127.0.0.1:1/db?connect_timeout=2", "store: postgres u@127.0.0.1:1/db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.url)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Open(%q): %v", tc.url, err)
				}
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Open(%q) err = %v, want one containing %q", tc.url, err, tc.wantErr)
			}
		})
	}
}
