package dsl_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runner-dev/runner/dsl"
)

// FuzzCheck feeds arbitrary files to the loader and the checker: no input
// may make them panic, every diagnostic must carry a position, and the
// quick schema validator must decide every document as the schema library
// does.
func FuzzCheck(f *testing.F) {
	for _, glob := range []string{"testdata/invalid/*.yaml", "testdata/valid/*.yaml", "../pipelines/*/*.yaml", "../agents/*.yaml", "../rules/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	c := newChecker(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		docs, diags := dsl.Parse("fuzz.yaml", src)
		_, more := c.Check(docs)
		for _, d := range append(diags, more...) {
			if d.Pos.File == "" || d.Message == "" {
				t.Errorf("diagnostic without position or message: %+v", d)
			}
		}
		for _, d := range docs {
			if why := c.QuickDisagrees(d); why != "" {
				t.Errorf("%s: %s", d.Pos(d.Root), why)
			}
		}
	})
}
