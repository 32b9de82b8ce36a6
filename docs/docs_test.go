package docs

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-dev/runner/builtins"
	"github.com/runner-dev/runner/dsl"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// Markers: the HTML comment on the line before a fence says how to check
// the block.
const (
	markRuns         = "runs"           // an sh block that must run and exit 0
	markNotValidated = "not validated:" // a runner document left unchecked, and why
	markFile         = "file:"          // the block is this file's content
	markValidateWith = "validate with:" // paths validated with the block
)

// readPages reads the README, the CHANGELOG, every page of docs/ and the
// examples' READMEs.
func readPages(t *testing.T) []*page {
	t.Helper()
	names := []string{"README.md", "CHANGELOG.md"}
	more, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		names = append(names, "docs/"+m)
	}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, "examples/README.md")
	for _, e := range examples {
		rel, _ := filepath.Rel(root, e)
		names = append(names, filepath.ToSlash(rel))
	}
	var pages []*page
	for _, n := range names {
		p, err := readPage(root, n)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p)
	}
	return pages
}

// TestPagesRender: every code fence closes, with nothing after its
// closing backticks (GitHub would render the rest of the page as code),
// and prose lines fit.
func TestPagesRender(t *testing.T) {
	for _, p := range readPages(t) {
		for _, problem := range p.problems {
			t.Error(problem)
		}
	}
}

// TestLinks: every relative link names a file of the repository, and
// every #anchor a heading of the page it points into.
func TestLinks(t *testing.T) {
	pages := map[string]*page{}
	for _, p := range readPages(t) {
		pages[p.path] = p
	}
	scheme := regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	for _, p := range pages {
		for _, l := range p.links {
			if scheme.MatchString(l.target) {
				continue
			}
			file, frag, _ := strings.Cut(l.target, "#")
			target := p.path
			if file != "" {
				target = path.Join(path.Dir(p.path), file)
			}
			if strings.HasPrefix(target, "../") {
				t.Errorf("%s:%d: %s leaves the repository", p.path, l.line, l.target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
				t.Errorf("%s:%d: %s: no file %s", p.path, l.line, l.target, target)
				continue
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			to := pages[target]
			if to == nil {
				var err error
				if to, err = readPage(root, target); err != nil {
					t.Fatal(err)
				}
				pages[target] = to
			}
			if !to.anchors[frag] {
				t.Errorf("%s:%d: %s: %s has no heading whose anchor is #%s", p.path, l.line, l.target, target, frag)
			}
		}
	}
}

// TestIndexListsEveryPage: a reader finds every page of docs/ from its
// index.
func TestIndexListsEveryPage(t *testing.T) {
	index, err := readPage(root, "docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range index.links {
		linked[l.target] = true
	}
	names, _ := filepath.Glob("*.md")
	for _, n := range names {
		if n != "README.md" && !linked[n] {
			t.Errorf("docs/README.md does not link to %s", n)
		}
	}
}

// TestYAMLBlocksValidate: every yaml block that is a runner document
// validates with the project's validator, alone or with the paths its
// marker names; a block marked as a file's copy is that file, validated
// with the other files of its folder.
func TestYAMLBlocksValidate(t *testing.T) {
	dir := t.TempDir()
	for _, p := range readPages(t) {
		for _, b := range p.blocks {
			if (b.info != "yaml" && b.info != "yml") || !strings.Contains(b.text, "apiVersion: runner/v1") {
				continue
			}
			at := func(line int) string { return p.path + ":" + strconv.Itoa(b.line+line) }
			var with []string
			switch {
			case strings.HasPrefix(b.marker, markNotValidated):
				if strings.TrimSpace(strings.TrimPrefix(b.marker, markNotValidated)) == "" {
					t.Errorf("%s: say why the block is not validated", at(0))
				}
				continue
			case strings.HasPrefix(b.marker, markFile):
				name := filepath.Join(root, filepath.FromSlash(strings.TrimSpace(strings.TrimPrefix(b.marker, markFile))))
				src, err := os.ReadFile(name)
				if err != nil || strings.TrimSuffix(string(src), "\n") != b.text {
					t.Errorf("%s: the block is not %s as it is (%v): copy the file into the page", at(0), name, err)
				}
				for _, d := range validate(t, []string{filepath.Dir(name)}) { // the file with its folder
					t.Errorf("%s (shown at %s): %s", d.Pos, at(0), d.Message)
				}
				continue
			case strings.HasPrefix(b.marker, markValidateWith):
				for _, w := range strings.Fields(strings.TrimPrefix(b.marker, markValidateWith)) {
					with = append(with, filepath.Join(root, filepath.FromSlash(w)))
				}
			}
			file := filepath.Join(dir, strings.ReplaceAll(p.path, "/", "_")+"-"+strconv.Itoa(b.line)+".yaml")
			if err := os.WriteFile(file, []byte(b.text+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, d := range validate(t, append([]string{file}, with...)) {
				pos := d.Pos.String()
				if d.Pos.File == file {
					pos = at(d.Pos.Line) + ":" + strconv.Itoa(d.Pos.Col)
				}
				t.Errorf("%s: %s", pos, d.Message)
			}
		}
	}
}

// validate checks the definitions at paths as runner validate does and
// returns its errors.
func validate(t *testing.T, paths []string) dsl.Diagnostics {
	checker, err := dsl.NewChecker(builtins.Registry())
	if err != nil {
		t.Fatal(err)
	}
	docs, diags := dsl.Load(paths...)
	_, more := checker.Check(docs)
	var errs dsl.Diagnostics
	for _, d := range append(diags, more...).Sorted() {
		if d.Severity == dsl.Error {
			errs = append(errs, d)
		}
	}
	return errs
}

// TestNamedTestsExist: a test or benchmark a page names beside a claim
// exists, so the claim still rests on it.
func TestNamedTestsExist(t *testing.T) {
	defined := map[string]bool{}
	funcRE := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)[A-Z]\w*)\(`)
	err := filepath.WalkDir(root, func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "node_modules" || e.Name() == ".git") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(name, "_test.go") {
			src, err := os.ReadFile(name)
			for _, m := range funcRE.FindAllSubmatch(src, -1) {
				defined[string(m[1])] = true
			}
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	namedRE := regexp.MustCompile("`((?:Test|Benchmark)[A-Z]\\w*)[`/]")
	for _, p := range readPages(t) {
		for i, l := range p.lines {
			for _, m := range namedRE.FindAllStringSubmatch(l, -1) {
				if !defined[m[1]] {
					t.Errorf("%s:%d: no test or benchmark is named %s", p.path, i+1, m[1])
				}
			}
		}
	}
}
