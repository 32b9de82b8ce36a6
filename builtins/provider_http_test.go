package builtins

import (
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// collectEvents reads every event of r, and the error that ended it.
func collectEvents(r io.Reader) ([]sseEvent, error) {
	var evs []sseEvent
	for ev, err := range sseEvents(r) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func TestSSEEvents(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []sseEvent
	}{
		{"named events", "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n",
			[]sseEvent{{"a", []byte("1")}, {"b", []byte("2")}}},
		{"multi-line data joined by newlines", "data: {\"a\":\ndata: 1}\ndata:\n\n",
			[]sseEvent{{"", []byte("{\"a\":\n1}\n")}}},
		{"comments skipped", ": keep-alive\n\n: more\ndata: x\n: between\n\n",
			[]sseEvent{{"", []byte("x")}}},
		{"CRLF line ends", "event: e\r\ndata: x\r\ndata: y\r\n\r\ndata: z\r\n\r\n",
			[]sseEvent{{"e", []byte("x\ny")}, {"", []byte("z")}}},
		{"one space after the colon dropped", "data:x\n\ndata:  y\n\n",
			[]sseEvent{{"", []byte("x")}, {"", []byte(" y")}}},
		{"a field without a colon", "data\n\n",
			[]sseEvent{{"", []byte{}}}},
		{"other fields skipped", "id: 7\nretry: 100\nfoo: bar\ndata: x\n\n",
			[]sseEvent{{"", []byte("x")}}},
		{"an event without data is not yielded and resets the name", "event: a\n\ndata: 1\n\n",
			[]sseEvent{{"", []byte("1")}}},
		{"extra blank lines", "\n\n\ndata: 1\n\n\n\ndata: 2\n\n",
			[]sseEvent{{"", []byte("1")}, {"", []byte("2")}}},
		{"an event cut short is dropped", "data: 1\n\ndata: 2\n",
			[]sseEvent{{"", []byte("1")}}},
		{"a last line without its end is dropped", "data: 1\n\ndata: [DONE]",
			[]sseEvent{{"", []byte("1")}}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []struct {
				how string
				r   io.Reader
			}{
				{"whole", strings.NewReader(tt.stream)},
				// Every event split across reads, CRLF pairs too.
				{"a byte a read", iotest.OneByteReader(strings.NewReader(tt.stream))},
			} {
				got, err := collectEvents(r.r)
				if err != nil {
					t.Fatalf("%s: error %v", r.how, err)
				}
				if !reflect.DeepEqual(normEvents(got), normEvents(tt.want)) {
					t.Errorf("%s: events\n got %q\nwant %q", r.how, got, tt.want)
				}
			}
		})
	}
}

// normEvents makes nil and empty data compare equal.
func normEvents(evs []sseEvent) []sseEvent {
	out := make([]sseEvent, len(evs))
	for i, ev := range evs {
		out[i] = sseEvent{ev.name, append([]byte{}, ev.data...)}
	}
	return out
}

func TestSSEEventsStopEarly(t *testing.T) {
	n := 0
	for range sseEvents(strings.NewReader("data: 1\n\ndata: 2\n\n")) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("got %d events, want to stop after 1", n)
	}
}

func TestSSEEventsReadError(t *testing.T) {
	cut := errors.New("connection reset")
	got, err := collectEvents(io.MultiReader(strings.NewReader("data: 1\n\ndata: 2"), iotest.ErrReader(cut)))
	if !errors.Is(err, cut) {
		t.Errorf("error = %v, want %v", err, cut)
	}
	if len(got) != 1 || string(got[0].data) != "1" {
		t.Errorf("events before the error = %q, want the first", got)
	}
}

// repeatReader reads an endless run of one byte.
type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

func TestSSEEventsBounds(t *testing.T) {
	line := io.MultiReader(strings.NewReader("data: "), io.LimitReader(repeatReader('x'), responseBodyMax+1), strings.NewReader("\n\n"))
	if _, err := collectEvents(line); err == nil || !strings.Contains(err.Error(), "line exceeds") {
		t.Errorf("a line over the bound: error %v, want line exceeds", err)
	}
	// Lines of 1 MiB, more than the bound in all, in one event.
	var lines []io.Reader
	for range responseBodyMax>>20 + 1 {
		lines = append(lines, strings.NewReader("data: "), io.LimitReader(repeatReader('x'), 1<<20), strings.NewReader("\n"))
	}
	if _, err := collectEvents(io.MultiReader(lines...)); err == nil || !strings.Contains(err.Error(), "event exceeds") {
		t.Errorf("an event over the bound: error %v, want event exceeds", err)
	}
}

func TestReadJSONBound(t *testing.T) {
	body := io.MultiReader(strings.NewReader(`"`), io.LimitReader(repeatReader('x'), responseBodyMax), strings.NewReader(`"`))
	var v string
	err := readJSON(&http.Response{Body: io.NopCloser(body)}, &v)
	if err == nil || !strings.Contains(err.Error(), "response body exceeds") {
		t.Errorf("error %v, want response body exceeds", err)
	}
}

func TestEncodeJSON(t *testing.T) {
	got, err := encodeJSON(map[string]string{"content": "<b>&</b>"})
	if err != nil || string(got) != `{"content":"<b>&</b>"}` {
		t.Errorf("encodeJSON = %s, %v; want <, > and & unescaped and no newline", got, err)
	}
}
