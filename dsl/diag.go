package dsl

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Severity says whether a diagnostic fails validation.
type Severity string

// Severities, from the most serious.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Diagnostic is one problem found in the definitions, at the position of the
// offending value. Every phase (load, schema, expressions, references, graph,
// compile) reports through this type. Code names the problem's class for
// machines (one of Codes); End, when set, is where the offending text ends
// (its line and the column just past it).
type Diagnostic struct {
	Pos      Pos
	End      Pos
	Severity Severity
	Code     string
	Message  string
	Hint     string
}

// lineCol is the end of a diagnostic in JSON: its file is the start's.
type lineCol struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// MarshalJSON renders the diagnostic as runner validate --format json
// prints it: {"pos": {file, line, col}, "end": {line, col}, "severity",
// "code", "message", "hint"}, without end when there is none and without
// hint when it is empty.
func (d Diagnostic) MarshalJSON() ([]byte, error) {
	var end *lineCol
	if d.End.Line > 0 {
		end = &lineCol{Line: d.End.Line, Col: d.End.Col}
	}
	return json.Marshal(struct {
		Pos      Pos      `json:"pos"`
		End      *lineCol `json:"end,omitempty"`
		Severity Severity `json:"severity"`
		Code     string   `json:"code"`
		Message  string   `json:"message"`
		Hint     string   `json:"hint,omitempty"`
	}{d.Pos, end, d.Severity, d.Code, d.Message, d.Hint})
}

// Error renders the diagnostic as file:line:col: severity: message.
func (d Diagnostic) Error() string {
	s := fmt.Sprintf("%s: %s: %s", d.Pos, d.Severity, d.Message)
	if d.Hint != "" {
		s += " (" + d.Hint + ")"
	}
	return s
}

// Diagnostics is a list of problems; the zero value is ready to use.
type Diagnostics []Diagnostic

// Errorf adds an error of class code (one of Codes) at pos.
func (ds *Diagnostics) Errorf(pos Pos, code, format string, args ...any) *Diagnostic {
	return ds.add(pos, Error, code, fmt.Sprintf(format, args...))
}

// Warnf adds a warning of class code (one of Codes) at pos.
func (ds *Diagnostics) Warnf(pos Pos, code, format string, args ...any) *Diagnostic {
	return ds.add(pos, Warning, code, fmt.Sprintf(format, args...))
}

func (ds *Diagnostics) add(pos Pos, sev Severity, code, msg string) *Diagnostic {
	*ds = append(*ds, Diagnostic{Pos: pos, Severity: sev, Code: code, Message: msg})
	return &(*ds)[len(*ds)-1]
}

// HasErrors reports whether any diagnostic is an error, or, when strict, a warning.
func (ds Diagnostics) HasErrors(strict bool) bool {
	for _, d := range ds {
		if d.Severity == Error || strict {
			return true
		}
	}
	return false
}

// Sorted returns the diagnostics sorted by file and position, with exact
// duplicates removed (a shared rule set checked for two agents reports once).
func (ds Diagnostics) Sorted() Diagnostics {
	out := append(Diagnostics(nil), ds...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pos.Before(out[j].Pos) })
	uniq := out[:0]
	for i, d := range out {
		if i > 0 && d == out[i-1] {
			continue
		}
		uniq = append(uniq, d)
	}
	return uniq
}

// Err returns the diagnostics as an error if any is an error, else nil.
func (ds Diagnostics) Err() error {
	if ds.HasErrors(false) {
		return ds.Sorted()
	}
	return nil
}

// Error renders the first diagnostics, one a line.
func (ds Diagnostics) Error() string {
	var s string
	for i, d := range ds {
		if i == 10 {
			return s + fmt.Sprintf("\n... and %d more", len(ds)-10)
		}
		if i > 0 {
			s += "\n"
		}
		s += d.Error()
	}
	return s
}
