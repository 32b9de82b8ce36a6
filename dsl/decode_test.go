package dsl

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestLocateDecodeErrors: every value that does not decode is found at
// its own line:col with a message for its Go type.
func TestLocateDecodeErrors(t *testing.T) {
	type Inner struct {
		Wait time.Duration `yaml:"wait"`
	}
	type Base struct {
		Until time.Duration `yaml:"until"`
	}
	type config struct {
		N      int            `yaml:"n"`
		Small  int8           `yaml:"small"`
		Count  uint16         `yaml:"count"`
		Ratio  float64        `yaml:"ratio"`
		On     bool           `yaml:"on"`
		Name   string         `yaml:"name"`
		Inner  Inner          `yaml:"inner"`
		List   []Inner        `yaml:"list"`
		ByName map[string]int `yaml:"by_name"`
		Any    any            `yaml:"any"`
		Plain  int
		Base   `yaml:",inline"`
	}
	tests := []struct {
		name, src string
		want      []string // line:col: message
	}{
		{"fits", "{n: 1, small: 2, count: 3, ratio: 1.5, on: true, name: x, inner: {wait: 1s}, any: [1, {a: b}], plain: 4}", nil},
		{"int out of range", "n: 99999999999999999999", []string{"1:4: 99999999999999999999 in c.n is out of range: at most 9223372036854775807"}},
		{"int8 out of range", "small: 300", []string{"1:8: 300 in c.small is out of range: at most 127"}},
		{"uint out of range", "count: -1", []string{"1:8: -1 in c.count is out of range: between 0 and 65535"}},
		{"not an integer", "n: 1e3x", []string{"1:4: expected an integer in c.n, got string"}},
		{"not a number", "ratio: x", []string{"1:8: expected a number in c.ratio, got string"}},
		{"not a boolean", "on: maybe", []string{"1:5: expected true or false in c.on, got string"}},
		{"not a string", "name: [a]", []string{"1:7: expected a string in c.name, got list"}},
		{"duration", "inner: {wait: 99999999999999999999s}",
			[]string{`1:15: invalid duration "99999999999999999999s" in c.inner.wait; write it like 500ms, 10s or 2m, at most 2562047h`}},
		{"inline duration", "until: 3 days", []string{`1:8: invalid duration "3 days" in c.until; write it like 500ms, 10s or 2m, at most 2562047h`}},
		{"list items", "list:\n  - {wait: 1s}\n  - {wait: forever}", []string{`3:12: invalid duration "forever" in c.list[1].wait; write it like 500ms, 10s or 2m, at most 2562047h`}},
		{"map values", "by_name: {a: 1, b: x}", []string{"1:20: expected an integer in c.by_name.b, got string"}},
		{"untagged field", "plain: x", []string{"1:8: expected an integer in c.plain, got string"}},
		{"a list for a struct", "inner: [1]", []string{"1:8: expected a mapping in c.inner, got list"}},
		{"every one", "n: x\nratio: y", []string{"1:4: expected an integer in c.n, got string", "2:8: expected a number in c.ratio, got string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tt.src), &doc); err != nil {
				t.Fatal(err)
			}
			n := doc.Content[0]
			var got []string
			locateDecodeErrors(n, reflect.TypeFor[config](), "c", func(at *yaml.Node, msg string) {
				got = append(got, fmt.Sprintf("%d:%d: %s", at.Line, at.Column, msg))
			})
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			var c config
			if err := n.Decode(&c); (err == nil) != (len(tt.want) == 0) {
				t.Errorf("the decoder says %v, the walk found %d problems", err, len(got))
			}
		})
	}
}
