package docs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLanguageListsEveryNodeType: the node types' table of the language
// reference has a row for each node type, naming every field of its with:.
func TestLanguageListsEveryNodeType(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "schemas", "nodes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var nodes struct {
		Defs map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(src, &nodes); err != nil {
		t.Fatal(err)
	}
	lang, err := readPage(root, "docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range lang.lines {
		name, rest, ok := strings.Cut(strings.TrimPrefix(l, "| `"), "` |")
		if _, seen := rows[name]; ok && !seen && strings.HasPrefix(l, "| `") {
			rows[name] = rest
		}
	}
	for typ, def := range nodes.Defs {
		row, ok := rows[typ]
		if !ok {
			t.Errorf("docs/language.md: the node types' table has no row for %s", typ)
			continue
		}
		for field := range def.Properties {
			if !strings.Contains(row, "`"+field+"`") {
				t.Errorf("docs/language.md: the row of node type %s does not name its field %s", typ, field)
			}
		}
	}
}

// TestLanguageListsEveryField: each document kind's section of the
// language reference names every top-level field its schema allows, in its
// example (field:) or its text (`field`).
func TestLanguageListsEveryField(t *testing.T) {
	lang, err := readPage(root, "docs/language.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	var kind string
	for _, l := range lang.lines {
		switch {
		case strings.HasPrefix(l, "### "):
			kind = strings.ToLower(strings.TrimPrefix(l, "### "))
		case strings.HasPrefix(l, "## "):
			kind = ""
		default:
			sections[kind] += l + "\n"
		}
	}
	common := map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "language": true}
	for _, k := range []string{"pipeline", "agent", "ruleset", "skill", "tool", "mcpserver", "model", "test"} {
		src, err := os.ReadFile(filepath.Join(root, "schemas", k+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(src, &schema); err != nil {
			t.Fatal(err)
		}
		if sections[k] == "" {
			t.Errorf("docs/language.md has no section ### %s", k)
			continue
		}
		for field := range schema.Properties {
			text := sections[k]
			if common[field] {
				text = sections[""] // described once, for every kind
			}
			if !regexp.MustCompile(`(?m)(^\s*` + field + `:|` + "`" + field + "[`:.])").MatchString(text) {
				t.Errorf("docs/language.md, ### %s: field %s is in neither the example nor the text", k, field)
			}
		}
	}
}
