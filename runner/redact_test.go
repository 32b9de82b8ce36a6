package runner

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"
)

// secretCases are secrets with the characters encodings treat specially:
// quotes, backslashes, slashes, HTML, URL delimiters, non-ASCII, emoji.
var secretCases = []string{
	"sk-live-0123456789abcdefXYZ",
	`p"a\ss/w<o>r&d+=?#%`,
	"tøken-ünïcode-😀-value",
	"abcd", // the shortest secret hidden
}

// derived returns s in the encodings a secret takes on its way out, each
// written here with the standard library, apart from the Redactor's code.
func derived(s string) map[string]string {
	b := []byte(s)
	html, _ := json.Marshal(s)
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return map[string]string{
		"raw":           s,
		"json":          strings.Trim(string(html), `"`),
		"json no html":  strings.TrimSuffix(strings.Trim(strings.TrimSpace(plain.String()), `"`), `"`),
		"json ascii":    pythonJSON(s),
		"json slashes":  strings.ReplaceAll(strings.Trim(strings.TrimSpace(plain.String()), `"`), "/", `\/`),
		"query":         url.QueryEscape(s),
		"path":          url.PathEscape(s),
		"query lower":   pctEscape.ReplaceAllStringFunc(url.QueryEscape(s), strings.ToLower),
		"hex":           hex.EncodeToString(b),
		"HEX":           strings.ToUpper(hex.EncodeToString(b)),
		"base64":        base64.StdEncoding.EncodeToString(b),
		"base64 raw":    base64.RawStdEncoding.EncodeToString(b),
		"base64url":     base64.URLEncoding.EncodeToString(b),
		"base64url raw": base64.RawURLEncoding.EncodeToString(b),
	}
}

// pctEscape is a %XX escape of a URL.
var pctEscape = regexp.MustCompile(`%[0-9A-F]{2}`)

// pythonJSON is s as Python's json.dumps writes it: non-ASCII as \uXXXX.
func pythonJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x80:
			b.WriteRune(r)
		default:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		}
	}
	return b.String()
}

func TestRedactorForms(t *testing.T) {
	for _, secret := range secretCases {
		r := NewRedactor(secret)
		for name, form := range derived(secret) {
			t.Run(secret+"/"+name, func(t *testing.T) {
				in := "before " + form + " after"
				got := r.String(in)
				if got != "before *** after" {
					t.Errorf("String(%q) = %q, want %q", in, got, "before *** after")
				}
			})
		}
	}
}

// TestRedactorBase64Inside: a secret inside a longer base64 value (an
// HTTP Basic credential) is hidden at each of its three alignments.
func TestRedactorBase64Inside(t *testing.T) {
	secret := "correct-horse-battery-staple"
	r := NewRedactor(secret)
	for _, prefix := range []string{"", "u:", "us:", "user:", "admin:"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			v := enc.EncodeToString([]byte(prefix + secret + "@host"))
			got := r.String(v)
			if leak := base64Leak(got, secret); leak != "" {
				t.Errorf("prefix %q: String(%q) = %q, which decodes to %q of the secret", prefix, v, got, leak)
			}
		}
	}
}

// base64Leak returns a part of secret (6 bytes or more) that some run of
// base64 characters in s decodes to, at any alignment, or "".
func base64Leak(s, secret string) string {
	runs := strings.FieldsFunc(s, func(c rune) bool {
		return !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("+/-_", c))
	})
	for _, run := range runs {
		for off := range 4 {
			if off >= len(run) {
				break
			}
			part := run[off:]
			part = part[:len(part)/4*4]
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				dec, err := enc.DecodeString(part)
				if err != nil {
					continue
				}
				for i := 0; i+6 <= len(secret); i++ {
					if strings.Contains(string(dec), secret[i:i+6]) {
						return secret[i : i+6]
					}
				}
			}
		}
	}
	return ""
}

func TestRedactorShortSecret(t *testing.T) {
	if r := NewRedactor("abc", ""); r != nil {
		t.Errorf("NewRedactor(short) = %v, want nil", r)
	}
	var r *Redactor
	if got := r.String("abc"); got != "abc" {
		t.Errorf("nil Redactor: String = %q", got)
	}
}

func TestRedactorValue(t *testing.T) {
	secret := `t0k"en/value`
	r := NewRedactor(secret)
	type record struct {
		Name string `json:"name"`
		Note string `json:"note"`
	}
	in := map[string]any{
		"body":    "got " + secret,
		"json":    `{"key":"` + strings.ReplaceAll(secret, `"`, `\"`) + `"}`,
		"list":    []any{"a", base64.StdEncoding.EncodeToString([]byte(secret)), 3},
		"strings": []string{url.QueryEscape(secret)},
		secret:    true,
		"struct":  record{Name: "x", Note: secret},
		"clean":   []any{"a", map[string]any{"b": 1}},
	}
	before, _ := json.Marshal(in)
	got := r.Value(in)
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Errorf("Value changed its argument:\n%s\n%s", before, after)
	}
	out, _ := json.Marshal(got)
	for name, form := range derived(secret) {
		if strings.Contains(string(out), form) || strings.Contains(string(out), strings.Trim(mustJSON(form), `"`)) {
			t.Errorf("%s form %q in %s", name, form, out)
		}
	}
	want := `{"***":true,"body":"got ***","clean":["a",{"b":1}],"json":"{\"key\":\"***\"}","list":["a","***",3],` +
		`"strings":["***"],"struct":{"name":"x","note":"***"}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestRedactorError(t *testing.T) {
	secret := "sk-0123456789"
	r := NewRedactor(secret)
	base := &TimeoutError{What: "tool " + secret, After: 1}
	err := r.Error(fmt.Errorf("calling: %w", base))
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "tool ***") {
		t.Errorf("Error() = %q", err)
	}
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Error("the redacted error does not unwrap to its cause")
	}
	clean := errors.New("nothing secret")
	if r.Error(clean) != clean {
		t.Error("an error without secrets was wrapped")
	}
	if r.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

// TestRedactorStream: a secret split across chunks at any point never
// reaches emit, and the text that does is the redacted whole.
func TestRedactorStream(t *testing.T) {
	secret := "sk-stream-0123456789"
	r := NewRedactor(secret)
	text := "the key is " + secret + ", or " + base64.StdEncoding.EncodeToString([]byte(secret)) + " encoded."
	for size := 1; size <= len(text); size++ {
		var got strings.Builder
		var chunks []string
		write, flush := r.Stream(func(s string) { chunks = append(chunks, s); got.WriteString(s) })
		for i := 0; i < len(text); i += size {
			write(text[i:min(i+size, len(text))])
		}
		flush()
		if want := r.String(text); got.String() != want {
			t.Fatalf("chunks of %d: emitted %q, want %q", size, got.String(), want)
		}
		for _, c := range chunks {
			if strings.Contains(c, secret[:len(secret)/2]) {
				t.Fatalf("chunks of %d: chunk %q holds half the secret", size, c)
			}
		}
	}
}

func TestRedactorReply(t *testing.T) {
	secret := "sk-reply-0123456789"
	r := NewRedactor(secret)
	resp := &ChatResponse{Message: Message{Role: "assistant", Content: "it is " + secret,
		ToolCalls: []ToolCallRequest{{ID: "c1", Name: "send", Args: `{"key":"` + secret + `"}`}}}}
	got := r.reply(resp)
	if got.Message.Content != "it is ***" || got.Message.ToolCalls[0].Args != `{"key":"***"}` {
		t.Errorf("reply = %+v", got.Message)
	}
	if !strings.Contains(resp.Message.Content, secret) {
		t.Error("reply changed the provider's response")
	}
}
