package builtins_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/runner-dev/runner/runner"
)

// xmlToolSrc declares the xml_validate builtin as the shipped workload does.
const xmlToolSrc = `apiVersion: runner/v1
kind: Tool
metadata: {name: xml_validate}
builtin: xml_validate
parameters:
  type: object
  properties:
    xml: {type: string}
    root: {type: string}
    attributes: {type: array, items: {type: string}}
  required: [xml]
  additionalProperties: false
`

func TestXMLValidate(t *testing.T) {
	tool := buildTool(t, xmlToolSrc, "xml_validate")
	project := func(body string) string {
		return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- generated -->\n" +
			"<ChoregrapheProject xmlns=\"http://www.aldebaran-robotics.com/schema/choregraphe/project.xsd\" xar_version=\"3\">\n" +
			body + "\n</ChoregrapheProject>\n"
	}
	root := map[string]any{"root": "ChoregrapheProject", "attributes": []any{"xar_version"}}
	cases := []struct {
		name  string
		xml   string
		opts  map[string]any
		valid bool
		err   string // a substring of the error
		line  int64
	}{
		{"well-formed project", project(`  <Box name="root"><Timeline fps="25"/></Box>`), root, true, "", 0},
		{"well-formed, no root required", "<a><b/>text &amp; more</a>", nil, true, "", 0},
		{"mismatched end tag", project("  <Box name=\"root\">\n    <Timeline fps=\"25\">\n  </Box>"), root, false,
			"element <Timeline> closed by </Box>", 6},
		{"unclosed element", "<ChoregrapheProject xar_version=\"3\">\n<Box>\n", root, false, "unexpected EOF", 3},
		{"unquoted attribute", "<a>\n<b x=1/></a>", nil, false, "unquoted or missing attribute value", 2},
		{"undefined entity", "<a>\n\n&nbsp;</a>", nil, false, "invalid character entity &nbsp;", 3},
		{"wrong root", "<Package name=\"x\"/>", root, false, "the root element is <Package>, want <ChoregrapheProject>", 1},
		{"missing attribute", "<ChoregrapheProject>\n</ChoregrapheProject>", root, false,
			"the root element <ChoregrapheProject> has no xar_version attribute", 1},
		{"two roots", "<a/>\n<b/>", nil, false, "a second root element <b>", 2},
		{"text outside the root", "<a/>\ntrailing words", nil, false, `text "trailing words" outside the root element`, 2},
		{"empty", "  \n", nil, false, "no root element", 2},
		{"only a comment", "<!-- nothing -->", root, false, "no root element", 1},
		{"prose around the xml", "Here is the behaviour:\n<a/>", nil, false, "outside the root element", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"xml": c.xml}
			for k, v := range c.opts {
				args[k] = v
			}
			out, err := tool.Call(context.Background(), &runner.ToolCall{Name: "xml_validate", Args: args})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			got := out.(map[string]any)
			if got["valid"] != c.valid || got["line"] != c.line || !strings.Contains(got["error"].(string), c.err) ||
				(c.valid && got["error"] != "") {
				t.Errorf("got %v\nwant valid=%v line=%d error containing %q", got, c.valid, c.line, c.err)
			}
		})
	}
}

func TestXMLValidateArguments(t *testing.T) {
	tool := buildTool(t, xmlToolSrc, "xml_validate")
	if _, err := tool.Call(context.Background(), &runner.ToolCall{Args: map[string]any{"root": "a"}}); err == nil ||
		!strings.Contains(err.Error(), "invalid arguments") {
		t.Errorf("a call without xml: err = %v, want invalid arguments", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tool.Call(ctx, &runner.ToolCall{Args: map[string]any{"xml": "<a/>"}}); err == nil {
		t.Error("a cancelled call succeeded")
	}
	want := map[string]any{"valid": true, "error": "", "line": int64(0)}
	if got, _ := tool.Call(context.Background(), &runner.ToolCall{Args: map[string]any{"xml": "<a/>"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
