package runner

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MarshalJSON encodes v as json.Marshal does, without its reflection for
// the JSON-like values of a state (maps, lists, strings, numbers,
// booleans); other values go through json.Marshal.
func MarshalJSON(v any) ([]byte, error) {
	p, err := encodeScratch(v, true)
	defer freeScratch(p)
	return bytes.Clone(*p), err
}

// WriteJSON writes the encoding of v and a newline to w, as a
// json.Encoder with SetEscapeHTML(escapeHTML) does, in one Write.
func WriteJSON(w io.Writer, v any, escapeHTML bool) error {
	p, err := encodeScratch(v, escapeHTML)
	defer freeScratch(p)
	if err == nil {
		*p = append(*p, '\n')
		_, err = w.Write(*p)
	}
	return err
}

// encodeScratch encodes v as AppendJSON does into a scratch buffer, for
// bytes needed only until a call returns (a copy, a write, Store.Put,
// which keeps a copy); freeScratch gives the buffer back.
func encodeScratch(v any, escapeHTML bool) (*[]byte, error) {
	p := scratch.Get().(*[]byte)
	b, err := AppendJSON((*p)[:0], v, escapeHTML)
	*p = b
	return p, err
}

// scratch holds the buffers encodeScratch encodes into: a state of some
// kilobytes grows a pooled buffer once, not a new one each time (the
// doubling garbage was a fifth of a served run's allocations).
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// freeScratch gives back a buffer of encodeScratch (nil: none); one past
// 1 MB is left to the collector.
func freeScratch(p *[]byte) {
	if p != nil && cap(*p) <= 1<<20 {
		scratch.Put(p)
	}
}

// AppendJSON appends the encoding of v to b as a json.Encoder with
// SetEscapeHTML(escapeHTML) writes it, without the newline: as
// MarshalJSON, without reflection for JSON-like values.
func AppendJSON(b []byte, v any, escapeHTML bool) ([]byte, error) {
	return jsonEncoder{escapeHTML: escapeHTML}.append(b, v)
}

// jsonEncoder encodes JSON-like values; escapeHTML says whether strings
// escape <, > and &, as encoding/json does by default.
type jsonEncoder struct{ escapeHTML bool }

// marshal encodes v with encoding/json.
func (e jsonEncoder) marshal(b []byte, v any) ([]byte, error) {
	if e.escapeHTML {
		out, err := json.Marshal(v)
		return append(b, out...), err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// append appends the encoding of v to b.
func (e jsonEncoder) append(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return e.appendString(b, x), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float64:
		return appendFloat(b, x, v)
	case []any:
		return e.appendList(b, x)
	case map[string]any:
		return e.appendObject(b, x)
	case State:
		return e.appendObject(b, x)
	case Update:
		return e.appendObject(b, x)
	}
	return e.marshal(b, v)
}

// appendString appends s quoted and escaped as encoding/json does:
// control characters, quotes and backslashes, <, > and & when escaping
// HTML, U+2028 and U+2029, and invalid UTF-8 as U+FFFD.
func (e jsonEncoder) appendString(b []byte, s string) []byte {
	safe := &plain
	if e.escapeHTML {
		safe = &plainHTML
	}
	b = append(b, '"')
	start := 0 // s[start:i] is yet to be appended as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control characters, and <, >, & when escaping HTML
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			switch r {
			case utf8.RuneError:
				b = append(b, `\ufffd`...)
			default: // JavaScript's line separators
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// hexDigits are the digits of \u escapes, as encoding/json writes them.
const hexDigits = "0123456789abcdef"

// plain and plainHTML say which ASCII characters stand in a JSON string
// as they are, without and with HTML escapes.
var plain, plainHTML = func() (t, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
		html[c] = t[c] && c != '<' && c != '>' && c != '&'
	}
	return t, html
}()

// appendFloat appends f as encoding/json does: integers and numbers of
// moderate size in decimal, others in exponent form; NaN and infinities
// are an error.
func appendFloat(b []byte, f float64, v any) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		_, err := json.Marshal(v)
		return b, err
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		out, err := json.Marshal(f)
		return append(b, out...), err
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), nil
}

func (e jsonEncoder) appendList(b []byte, list []any) ([]byte, error) {
	if list == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = e.append(b, v); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// field is a map entry, sorted by key to be encoded.
type field struct {
	k string
	v any
}

func (e jsonEncoder) appendObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var buf [16]field
	fields := buf[:0]
	for k, v := range m {
		fields = append(fields, field{k, v})
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.k, b.k) })
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(e.appendString(b, f.k), ':')
		var err error
		if b, err = e.append(b, f.v); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
