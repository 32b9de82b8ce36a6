package runner

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Redacted replaces a secret wherever a Redactor finds it.
const Redacted = "***"

// MinSecretLen is the shortest secret a Redactor hides. A shorter value is
// left alone: replacing every "ab" in every result would garble the run's
// output, and where the *** fell would spell the value out anyway. Real
// keys and tokens are tens of bytes.
const MinSecretLen = 4

// SecretKeeper is implemented by tools and providers that hold secrets
// (an http tool's secrets:, a model's API key). The compiler gathers them
// into the graph's Redactor.
type SecretKeeper interface {
	Secrets() []string
}

// Redactor hides secrets — and the forms they take on their way through
// encodings — from everything a run keeps or shows. The call path applies
// the graph's Redactor to every tool result and error and every model
// reply and error as they arrive (call.go), so no secret reaches the
// state, a record, an event, a checkpoint or the model; a node's error is
// redacted when the node returns it (run.go). Tools and providers use one
// for the errors they build themselves.
//
// The forms hidden, for each secret of at least MinSecretLen bytes: the
// raw value; JSON-escaped, as it appears inside a JSON string (Go's HTML
// escaping or not, non-ASCII as \uXXXX, "/" as "\/"); URL-escaped as a
// query or a path (upper- or lower-case hex); hex (either case); base64,
// standard and URL alphabets, with and without padding, and at each of the
// three alignments it can have inside a longer encoded value (a password
// inside an HTTP Basic credential). A nil *Redactor hides nothing.
type Redactor struct {
	forms []string // longest first
	rep   *strings.Replacer
	json  *strings.Replacer // the forms as they appear inside JSON text
}

// NewRedactor returns a Redactor of secrets, or nil when none is at least
// MinSecretLen bytes long.
func NewRedactor(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	for _, s := range secrets {
		if len(s) < MinSecretLen {
			continue
		}
		for _, f := range secretForms(s) {
			if len(f) >= MinSecretLen && !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	if len(forms) == 0 {
		return nil
	}
	var inJSON []string // each form as it appears inside JSON text
	seenJSON := map[string]bool{}
	for _, f := range forms {
		for _, q := range []string{jsonEscape(f, true), jsonEscape(f, false)} {
			if !seenJSON[q] {
				seenJSON[q] = true
				inJSON = append(inJSON, q)
			}
		}
	}
	forms = longestFirst(forms)
	return &Redactor{forms: forms, rep: replacer(forms), json: replacer(longestFirst(inJSON))}
}

// longestFirst sorts forms so that, where several match, the replacer
// takes the longest and leaves no part of it behind.
func longestFirst(forms []string) []string {
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return forms
}

// replacer replaces each of forms with ***.
func replacer(forms []string) *strings.Replacer {
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// secretForms are s and the forms it takes in JSON, URLs, hex and base64.
func secretForms(s string) []string {
	forms := []string{s,
		jsonEscape(s, true), jsonEscape(s, false), asciiJSON(s, "%04x"), asciiJSON(s, "%04X"),
		strings.ReplaceAll(jsonEscape(s, false), "/", `\/`),
		url.QueryEscape(s), url.PathEscape(s), lowerEscapes(url.QueryEscape(s)), lowerEscapes(url.PathEscape(s)),
		hex.EncodeToString([]byte(s)), strings.ToUpper(hex.EncodeToString([]byte(s))),
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		raw := enc.WithPadding(base64.NoPadding)
		forms = append(forms, enc.EncodeToString([]byte(s)), raw.EncodeToString([]byte(s)))
		forms = append(forms, base64Inner(raw, s)...)
	}
	return forms
}

// base64Inner returns, for each of the three byte offsets s can start at
// inside a longer encoded value, the characters of the encoding that
// depend on s alone: the first ones share bits with the bytes before s,
// the last one with the bytes after it.
func base64Inner(enc *base64.Encoding, s string) []string {
	var out []string
	for off := range 3 {
		e := enc.EncodeToString(append(make([]byte, off), s...))
		first := (8*off + 5) / 6       // the first character without bits of the padding
		last := 8 * (off + len(s)) / 6 // characters before this one end inside s
		if last > first {
			out = append(out, e[first:last])
		}
	}
	return out
}

// jsonEscape is s as it appears inside a JSON string that encoding/json
// wrote, with or without its HTML escaping (\u003c for <).
func jsonEscape(s string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`)
}

// asciiJSON is s inside a JSON string whose writer escapes every
// non-ASCII character as \uXXXX (Python's json.dumps), in the hex format
// given.
func asciiJSON(s, hexFormat string) string {
	var b strings.Builder
	for _, c := range jsonEscape(s, false) {
		switch {
		case c < utf8.RuneSelf:
			b.WriteRune(c)
		case c > 0xFFFF:
			c -= 0x10000
			fmt.Fprintf(&b, `\u`+hexFormat+`\u`+hexFormat, 0xD800+(c>>10), 0xDC00+(c&0x3FF))
		default:
			fmt.Fprintf(&b, `\u`+hexFormat, c)
		}
	}
	return b.String()
}

// lowerEscapes lower-cases the hex digits of the %XX escapes of s.
func lowerEscapes(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerHex(b[i+1]), lowerHex(b[i+2])
		}
	}
	return string(b)
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// String returns s with every secret form replaced by ***.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	return r.rep.Replace(s)
}

// Value returns v with every secret form replaced in its strings and map
// keys. It copies only what it changes, so a value shared with a tool's
// own data is never written to. A value of another Go type than the
// JSON-like ones is checked through its JSON encoding and, when that held
// a secret, replaced by the decoded, redacted encoding.
func (r *Redactor) Value(v any) any {
	if r == nil {
		return v
	}
	out, _ := r.value(v)
	return out
}

// value redacts v; changed reports whether anything was replaced.
func (r *Redactor) value(v any) (out any, changed bool) {
	switch x := v.(type) {
	case nil, bool, int, int64, float64, json.Number:
		return v, false
	case string:
		s := r.rep.Replace(x)
		return s, s != x
	case []any:
		return r.slice(x)
	case map[string]any:
		return r.object(x)
	case []string:
		var cp []string
		for i, s := range x {
			if red := r.rep.Replace(s); red != s {
				if cp == nil {
					cp = slices.Clone(x)
				}
				cp[i] = red
			}
		}
		return orValue(cp, x), cp != nil
	}
	return r.encoded(v)
}

func (r *Redactor) slice(x []any) (any, bool) {
	var cp []any
	for i, e := range x {
		if red, ok := r.value(e); ok {
			if cp == nil {
				cp = slices.Clone(x)
			}
			cp[i] = red
		}
	}
	return orValue(cp, x), cp != nil
}

func (r *Redactor) object(x map[string]any) (any, bool) {
	var cp map[string]any
	for k, e := range x {
		red, ok := r.value(e)
		rk := r.rep.Replace(k)
		if !ok && rk == k {
			continue
		}
		if cp == nil {
			cp = make(map[string]any, len(x))
			for k2, e2 := range x {
				cp[k2] = e2
			}
		}
		delete(cp, k)
		cp[rk] = red
	}
	if cp == nil {
		return x, false
	}
	return cp, true
}

// encoded redacts a value of any other type through its JSON encoding.
func (r *Redactor) encoded(v any) (any, bool) {
	data, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	red := r.json.Replace(string(data))
	if red == string(data) {
		return v, false
	}
	out, err := DecodeJSON([]byte(red))
	if err != nil { // a replacement broke the encoding: redact the decoded value
		if out, err = DecodeJSON(data); err != nil {
			return Redacted, true
		}
		return r.value(out)
	}
	return out, true
}

// orValue returns cp when it is set, else x.
func orValue[T any](cp, x []T) any {
	if cp != nil {
		return cp
	}
	return x
}

// Error returns err with every secret form in its message replaced; the
// result still unwraps to err for errors.Is and errors.As. It returns err
// itself when its message holds no secret.
func (r *Redactor) Error(err error) error {
	if r == nil || err == nil {
		return err
	}
	msg := err.Error()
	if red := r.rep.Replace(msg); red != msg {
		return &redactedError{msg: red, cause: err}
	}
	return err
}

// Wrap returns an error with message msg, secrets replaced, that unwraps
// to cause (which may be nil).
func (r *Redactor) Wrap(msg string, cause error) error {
	return &redactedError{msg: r.String(msg), cause: cause}
}

// redactedError is an error whose message holds no secret.
type redactedError struct {
	msg   string
	cause error
}

func (e *redactedError) Error() string { return e.msg }

func (e *redactedError) Unwrap() error { return e.cause }

// reply returns resp with every secret form replaced in the message: its
// text, and its tool calls' names, ids and arguments.
func (r *Redactor) reply(resp *ChatResponse) *ChatResponse {
	if r == nil || resp == nil {
		return resp
	}
	cp := *resp
	m := &cp.Message
	m.Content = r.String(m.Content)
	m.ToolCalls = slices.Clone(m.ToolCalls)
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		tc.ID, tc.Name, tc.Args = r.String(tc.ID), r.String(tc.Name), r.String(tc.Args)
	}
	return &cp
}

// Stream returns a function that passes text chunks on to emit with the
// secrets replaced, holding back the end of the text that could be the
// start of a secret until the next chunk tells; flush sends what is held
// back. A secret split across chunks is replaced all the same, and the
// text emitted is what String makes of the whole.
func (r *Redactor) Stream(emit func(string)) (write func(string), flush func()) {
	if r == nil {
		return emit, func() {}
	}
	var held string
	write = func(chunk string) {
		var out string
		out, held = r.scan(held + chunk)
		if out != "" {
			emit(out)
		}
	}
	flush = func() {
		if held != "" {
			emit(r.String(held))
			held = ""
		}
	}
	return write, flush
}

// scan replaces the secret forms of text, as String does (leftmost, then
// longest), up to the first place where a form could begin but the text
// ends first; it returns the replaced text and the rest.
func (r *Redactor) scan(text string) (out, rest string) {
	var b strings.Builder
	for i := 0; i < len(text); {
		tail := text[i:]
		if r.mayExtend(tail) {
			return b.String(), tail
		}
		if n := r.match(tail); n > 0 {
			b.WriteString(Redacted)
			i += n
			continue
		}
		b.WriteByte(text[i])
		i++
	}
	return b.String(), ""
}

// mayExtend reports whether some form is longer than tail and begins
// with it: more text could make tail (part of) a secret.
func (r *Redactor) mayExtend(tail string) bool {
	for _, f := range r.forms {
		if len(f) <= len(tail) {
			break // longest first: no longer form is left
		}
		if strings.HasPrefix(f, tail) {
			return true
		}
	}
	return false
}

// match returns the length of the longest form tail begins with, or 0.
func (r *Redactor) match(tail string) int {
	for _, f := range r.forms {
		if strings.HasPrefix(tail, f) {
			return len(f)
		}
	}
	return 0
}
