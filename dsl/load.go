package dsl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// APIVersion is the apiVersion every document declares.
const APIVersion = "runner/v1"

// maxFileSize bounds one definition file; larger files are refused unread.
const maxFileSize = 4 << 20

// Document is one YAML document of a definition file, decoded to a yaml.Node
// so that every value keeps its file:line:col.
type Document struct {
	File string
	Kind string
	Name string
	// Root is the document's top-level mapping.
	Root *yaml.Node
	// Src is the whole file's content (shared by the file's documents).
	Src []byte
}

// Pos returns the position of n in the document's file.
func (d *Document) Pos(n *yaml.Node) Pos { return posOf(d.File, n) }

// Get returns the value node of key in the document's top-level mapping.
func (d *Document) Get(key string) *yaml.Node { return mapGet(d.Root, key) }

// Load reads definition files and directories (recursively, *.yaml and
// *.yml, skipping hidden directories and the project settings file
// runner.yaml) and splits them into documents. Problems are returned as
// diagnostics; a file that cannot be read is an error diagnostic too.
func Load(paths ...string) ([]*Document, Diagnostics) {
	var docs []*Document
	var diags Diagnostics
	files, err := expand(paths)
	if err != nil {
		diags.Errorf(Pos{}, CodeFileRead, "%v", err)
	}
	for _, f := range files {
		src, err := readFile(f)
		if err != nil {
			diags.Errorf(Pos{File: f}, CodeFileRead, "%v", err)
			continue
		}
		d, ds := Parse(f, src)
		docs = append(docs, d...)
		diags = append(diags, ds...)
	}
	return docs, diags
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err == nil && len(src) > maxFileSize {
		err = fmt.Errorf("file is larger than %d MiB; split it into several files", maxFileSize>>20)
	}
	return src, err
}

// expand turns paths into the sorted list of definition files they name.
func expand(paths []string) ([]string, error) {
	var files []string
	var errs []error
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, e os.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case e.IsDir() && path != p && strings.HasPrefix(e.Name(), "."):
				return filepath.SkipDir // .git, .runner
			case !e.IsDir() && isYAML(path) && !isSettings(e.Name()):
				files = append(files, path)
			}
			return nil
		})
		errs = append(errs, err)
	}
	sort.Strings(files)
	return files, errors.Join(errs...)
}

// isSettings reports whether a file is the project settings file, which
// holds no documents.
func isSettings(name string) bool { return name == "runner.yaml" || name == "runner.yml" }

func isYAML(path string) bool {
	ext := filepath.Ext(path)
	return ext == ".yaml" || ext == ".yml"
}

// Parse splits one file's content into documents.
func Parse(file string, src []byte) ([]*Document, Diagnostics) {
	var diags Diagnostics
	if !utf8.Valid(src) {
		diags.Errorf(invalidUTF8(file, src), CodeFileEncoding, "file is not valid UTF-8; save it as UTF-8")
		return nil, diags
	}
	var docs []*Document
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			break
		}
		if err != nil {
			diags = append(diags, yamlError(file, src, err))
			break
		}
		if d := newDocument(file, src, &n, &diags); d != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 && len(diags) == 0 {
		diags.Warnf(Pos{File: file, Line: 1, Col: 1}, CodeFileEmpty, "file holds no documents")
	}
	return docs, diags
}

// newDocument checks one decoded document's structure and header.
func newDocument(file string, src []byte, n *yaml.Node, diags *Diagnostics) *Document {
	if len(n.Content) == 0 || isNull(n.Content[0]) {
		return nil // an empty document between --- separators
	}
	root := n.Content[0]
	if !expandAliases(file, root, diags) || checkNodes(file, root, diags) > 0 {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		diags.Errorf(posOf(file, root), CodeYAMLDocument, "a document must be a mapping with apiVersion, kind and metadata, not a %s", describe(root))
		return nil
	}
	d := &Document{File: file, Root: root, Src: src}
	d.Kind = scalarValue(d.Get("kind"))
	d.Name = scalarValue(mapGet(d.Get("metadata"), "name"))
	return d
}

// checkNodes reports duplicate keys and tags under n, whose aliases are
// expanded, and returns how many problems it found.
func checkNodes(file string, n *yaml.Node, diags *Diagnostics) int {
	count := 0
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		diags.Errorf(posOf(file, n), CodeYAMLTag, "YAML tag %s is not supported: runner reads plain YAML; write the value out (a document cannot include another file: list both in paths)", n.Tag)
		return 1
	}
	if n.Kind == yaml.MappingNode {
		keys := newKeySet(len(n.Content) / 2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if prev := keys.add(n.Content, i); prev != nil && k.Kind == yaml.ScalarNode {
				diags.Errorf(posOf(file, k), CodeYAMLDupKey, "duplicate key %q (first defined at line %d)", k.Value, prev.Line)
				count++
			}
		}
	}
	for _, c := range n.Content {
		count += checkNodes(file, c, diags)
	}
	return count
}

var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// yamlError turns a parser error into a diagnostic at its line. A tab in
// indentation at or before that line is the likely cause and is named instead.
func yamlError(file string, src []byte, err error) Diagnostic {
	msg := err.Error()
	pos := Pos{File: file, Line: 1, Col: 1}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		if m[1] != "" {
			pos.Line, _ = strconv.Atoi(m[1])
		}
		msg = m[2]
		if strings.HasPrefix(msg, "did not find expected") {
			// parser errors count lines from 0 and point at the construct's start
			pos.Line++
			pos.Col = constructCol(src, pos.Line, msg)
			msg += " in the construct that starts here"
		}
	}
	if tab, ok := indentTab(file, src); ok && tab.Line <= pos.Line {
		return Diagnostic{Pos: tab, Severity: Error, Code: CodeYAMLSyntax, Message: "tab character in indentation; YAML indents with spaces only"}
	}
	return Diagnostic{Pos: pos, Severity: Error, Code: CodeYAMLSyntax, Message: "invalid YAML: " + msg}
}

// constructCol is the column where the construct a parser error names
// starts on line: its opening bracket for a flow mapping or list, else
// the line's first non-blank character.
func constructCol(src []byte, line int, msg string) int {
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return 1
	}
	text := lines[line-1]
	open := ""
	switch {
	case strings.Contains(msg, "'}'"):
		open = "{"
	case strings.Contains(msg, "']'"):
		open = "["
	}
	if i := strings.Index(text, open); open != "" && i >= 0 {
		return utf8.RuneCountInString(text[:i]) + 1
	}
	return utf8.RuneCountInString(text[:len(text)-len(strings.TrimLeft(text, " \t"))]) + 1
}

// invalidUTF8 returns the position of the first byte that is not UTF-8.
func invalidUTF8(file string, src []byte) Pos {
	line, col := 1, 1
	for len(src) > 0 {
		r, size := utf8.DecodeRune(src)
		if r == utf8.RuneError && size <= 1 {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		src = src[size:]
	}
	return Pos{File: file, Line: line, Col: col}
}

// indentTab finds a tab in the leading whitespace of a line outside block
// scalars' content, where YAML forbids it.
func indentTab(file string, src []byte) (Pos, bool) {
	for i, line := range strings.Split(string(src), "\n") {
		for j, c := range line {
			if c == '\t' {
				return Pos{File: file, Line: i + 1, Col: j + 1}, true
			}
			if c != ' ' {
				break
			}
		}
	}
	return Pos{}, false
}

// LoadScript reads a file of scripted LLM replies: a YAML list, each item
// as in a Test document's script: block.
func LoadScript(name string) ([]Reply, error) {
	src, err := readFile(name)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	var replies []Reply
	if err := dec.Decode(&replies); err != nil && err != io.EOF {
		msg := strings.ReplaceAll(err.Error(), "in type dsl.", "in a scripted ")
		msg = strings.ReplaceAll(msg, "yaml: unmarshal errors:\n  ", "")
		return nil, fmt.Errorf("%s: %s (a script is a list of replies: text, tool_calls, output, usage, error, delay, node)", name, msg)
	}
	return replies, nil
}

// smallMapping is the most keys a mapping has for its duplicates to be
// found by scanning, without a map.
const smallMapping = 16

// keySet finds the keys of a mapping that repeat an earlier key: by
// scanning the earlier keys in a small mapping, through a map in a large
// one (every document has many small mappings).
type keySet map[string]*yaml.Node

// newKeySet returns the set for a mapping of n keys.
func newKeySet(n int) keySet {
	if n <= smallMapping {
		return nil
	}
	return make(keySet, n)
}

// add adds the key at index i of a mapping's content and returns the last
// earlier key of the same value, or nil.
func (s keySet) add(content []*yaml.Node, i int) *yaml.Node {
	k := content[i]
	if s != nil {
		prev := s[k.Value]
		s[k.Value] = k
		return prev
	}
	for j := i - 2; j >= 0; j -= 2 {
		if content[j].Value == k.Value {
			return content[j]
		}
	}
	return nil
}
