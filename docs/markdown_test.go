package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// maxLine is the longest a line of prose may be.
const maxLine = 120

// page is one Markdown file, read as GitHub renders it as far as the
// checks need: its code blocks, heading anchors, links and the problems
// found on the way (a fence that never closes, text after a closing fence).
type page struct {
	path     string // relative to the repository root, slash-separated
	lines    []string
	blocks   []block
	anchors  map[string]bool
	links    []link
	problems []string
}

// block is a fenced code block.
type block struct {
	line   int    // of the opening fence, 1-based
	info   string // the word after the opening backticks: yaml, sh, text, ...
	marker string // the HTML comment on the line before the fence, if any
	text   string // the lines between the fences
}

// link is an inline link's target, as written.
type link struct {
	line   int
	target string
}

var (
	fenceRE   = regexp.MustCompile("^ {0,3}(```+|~~~+)(.*)$")
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeRE    = regexp.MustCompile("`+[^`]*`+")
	commentRE = regexp.MustCompile(`^\s*<!--\s*(.*?)\s*-->\s*$`)
	inlineRE  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// readPage reads and parses the Markdown file at root/rel.
func readPage(root, rel string) (*page, error) {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	p := &page{path: rel, lines: strings.Split(strings.TrimSuffix(string(src), "\n"), "\n"), anchors: map[string]bool{}}
	p.parse()
	return p, nil
}

// parse walks the lines once: fences open and close, and outside them
// headings give anchors and text gives links.
func (p *page) parse() {
	seen := map[string]int{}
	var open *block
	var fence string
	var body []string
	for i, l := range p.lines {
		n := i + 1
		m := fenceRE.FindStringSubmatch(l)
		if open != nil {
			closes := m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence)
			switch {
			case closes && strings.TrimSpace(m[2]) == "":
				open.text = strings.Join(body, "\n")
				p.blocks = append(p.blocks, *open)
				open = nil
			case closes:
				p.problemf(n, "text after the closing %s: GitHub does not close the block opened at line %d here", fence, open.line)
				body = append(body, l)
			default:
				body = append(body, l)
			}
			continue
		}
		if m != nil {
			open = &block{line: n, info: firstWord(m[2]), marker: p.markerAbove(i)}
			fence, body = m[1], nil
			continue
		}
		if utf8.RuneCountInString(l) > maxLine && !strings.HasPrefix(strings.TrimSpace(l), "|") && !strings.Contains(l, "://") {
			p.problemf(n, "a line of %d characters: wrap prose under %d (tables and URLs aside)", utf8.RuneCountInString(l), maxLine)
		}
		if h := headingRE.FindStringSubmatch(l); h != nil {
			a := anchor(h[2])
			if k := seen[a]; k > 0 {
				p.anchors[fmt.Sprintf("%s-%d", a, k)] = true
			} else {
				p.anchors[a] = true
			}
			seen[a]++
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(l, ""), -1) {
			p.links = append(p.links, link{line: n, target: m[1]})
		}
	}
	if open != nil {
		p.problemf(open.line, "the code block opened here never closes")
	}
}

// firstWord returns the first word of s, or "".
func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// markerAbove returns the HTML comment on the line before line i, if any.
func (p *page) markerAbove(i int) string {
	if i == 0 {
		return ""
	}
	if m := commentRE.FindStringSubmatch(p.lines[i-1]); m != nil {
		return m[1]
	}
	return ""
}

func (p *page) problemf(line int, format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf("%s:%d: ", p.path, line)+fmt.Sprintf(format, args...))
}

// anchor is GitHub's anchor of a heading: the text as rendered (links and
// code marks dropped), lower-cased, without punctuation but hyphens and
// underscores, spaces turned into hyphens.
func anchor(heading string) string {
	heading = inlineRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestParse(t *testing.T) {
	src := "# Running agents\n\n" +
		"```sh\n$ runner threads history conv\n``` Ctrl-C stops the run at the next step boundary.\n\n" +
		"### Exit codes\n\nSee [exit codes](#exit-codes) and `[not](a link)`.\n" +
		"## Exit codes\n\n<!-- runs -->\n```sh\nrunner test\n```\n\n```yaml\nunclosed: true\n"
	p := &page{path: "README.md", lines: strings.Split(src, "\n"), anchors: map[string]bool{}}
	p.parse()
	wantProblems := []string{
		"README.md:5: text after the closing ```: GitHub does not close the block opened at line 3 here",
		"README.md:13: text after the closing ```: GitHub does not close the block opened at line 3 here",
		"README.md:17: the code block opened here never closes",
	}
	if strings.Join(p.problems, "\n") != strings.Join(wantProblems, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(p.problems, "\n"), strings.Join(wantProblems, "\n"))
	}
	// The first block swallows everything up to the bare fence at line 15:
	// the headings and the link inside it do not count.
	if len(p.blocks) != 1 || p.blocks[0].line != 3 {
		t.Fatalf("blocks: %+v", p.blocks)
	}
	if !p.anchors["running-agents"] || p.anchors["exit-codes"] || len(p.links) != 0 {
		t.Errorf("anchors %v, links %v: the swallowed heading and link must not count", p.anchors, p.links)
	}
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"What `runner validate` checks":              "what-runner-validate-checks",
		"Seed 000's endpoints":                       "seed-000s-endpoints",
		"Runs in the server, replicas and shutdown":  "runs-in-the-server-replicas-and-shutdown",
		"The [approval](approvals.md) lifecycle":     "the-approval-lifecycle",
		"runner_retention_sweeps_total — what it is": "runner_retention_sweeps_total--what-it-is",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}
