package dsl

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxReported caps how many diagnostics a report shows; the rest are counted.
const MaxReported = 100

// Formats a report can be written in.
const (
	FormatText   = "text"
	FormatJSON   = "json"
	FormatGitHub = "github"
)

// WriteReport writes diagnostics in format. source returns a file's content
// for the text format's source line and caret (nil when unknown).
func WriteReport(w io.Writer, ds Diagnostics, format string, source func(file string) []byte) error {
	shown, more := ds, 0
	if len(ds) > MaxReported {
		shown, more = ds[:MaxReported], len(ds)-MaxReported
	}
	switch format {
	case FormatJSON:
		if shown == nil {
			shown = Diagnostics{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"diagnostics": shown, "more": more})
	case FormatGitHub:
		for _, d := range shown {
			fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d%s,title=%s::%s\n", d.Severity, ghEscapeProp(d.Pos.File), d.Pos.Line, d.Pos.Col,
				ghEnd(d), ghEscapeProp(d.Code), ghEscape(messageOf(d)))
		}
	case FormatText:
		for _, d := range shown {
			fmt.Fprintf(w, "%s: %s: %s\n", d.Pos, d.Severity, messageOf(d))
			writeCaret(w, d.Pos, source, d.Code == CodeSchemaSecret)
		}
	default:
		return fmt.Errorf("unknown format %q: use text, json or github", format)
	}
	if more > 0 && format != FormatJSON {
		fmt.Fprintf(w, "... and %d more\n", more)
	}
	return nil
}

func messageOf(d Diagnostic) string {
	if d.Hint == "" {
		return d.Message
	}
	return d.Message + "; " + d.Hint
}

// writeCaret prints the diagnostic's source line and a caret under its
// column; masked, the line from the column on is not shown (a secret).
func writeCaret(w io.Writer, p Pos, source func(string) []byte, masked bool) {
	if p.Line == 0 || source == nil {
		return
	}
	src := source(p.File)
	lines := strings.Split(string(src), "\n")
	if p.Line > len(lines) {
		return
	}
	line := strings.TrimRight(lines[p.Line-1], "\r")
	col := min(max(p.Col, 1), utf8.RuneCountInString(line)+1)
	pad := []rune(line)[:col-1]
	for i, r := range pad {
		if r != '\t' {
			pad[i] = ' '
		}
	}
	if masked {
		line = string([]rune(line)[:col-1]) + "***"
	}
	fmt.Fprintf(w, "    %s\n    %s^\n", line, string(pad))
}

// ghEnd gives a GitHub annotation the diagnostic's end column when the
// diagnostic ends on its own line.
func ghEnd(d Diagnostic) string {
	if d.End.Line != d.Pos.Line || d.End.Col <= d.Pos.Col {
		return ""
	}
	return fmt.Sprintf(",endColumn=%d", d.End.Col)
}

// ghEscapeProp escapes a GitHub Actions workflow-command property.
func ghEscapeProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// ghEscape escapes a GitHub Actions workflow-command message.
func ghEscape(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}
