package builtins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runner-dev/runner/dsl"
	"github.com/runner-dev/runner/runner"
)

// IdempotencyMeta is the _meta key of a tool call that carries the call's
// idempotency key (thread:call id), the same for the call replayed after a
// crash, so the server can recognise it.
const IdempotencyMeta = "dev.runner/idempotency-key"

// mcpTool calls one tool of an MCP server through its Toolbox's client.
type mcpTool struct {
	def    *dsl.MCPTool
	client *mcpClient
}

// Call calls the tool with the call's arguments and idempotency key, and
// turns its result into the tool's output: the structured content, else
// the text (one text item: the string), images and resources as
// references. A result the server marks isError is the call's error.
func (t *mcpTool) Call(ctx context.Context, call *runner.ToolCall) (any, error) {
	s, _, err := t.client.tool(ctx, t.def)
	if err != nil {
		return nil, err
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: t.def.Tool, Arguments: call.Args, Meta: mcp.Meta{IdempotencyMeta: call.Key}})
	if err != nil {
		return nil, t.client.failed(ctx, s, err)
	}
	if res.IsError {
		return nil, runner.Permanent(fmt.Errorf("tool %s of MCP server %s: %s", t.def.Tool, t.client.def.Name, errorText(res.Content)))
	}
	return mcpOutput(res), nil
}

// Secrets returns the values of the server's secrets that are set.
func (t *mcpTool) Secrets() []string {
	var out []string
	for _, env := range t.client.def.Secrets {
		if v, ok := os.LookupEnv(env); ok {
			out = append(out, v)
		}
	}
	return out
}

// mcpOutput is a result's output.
func mcpOutput(res *mcp.CallToolResult) any {
	if res.StructuredContent != nil {
		return res.StructuredContent
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	out := make([]any, len(res.Content))
	for i, c := range res.Content {
		out[i] = contentItem(c)
	}
	return out
}

// contentItem is one content item of a result: text as it is, media and
// resources as references (what they are, how big, their digest), not
// inlined into the state.
func contentItem(c mcp.Content) map[string]any {
	switch c := c.(type) {
	case *mcp.TextContent:
		return map[string]any{"type": "text", "text": c.Text}
	case *mcp.ImageContent:
		return blobRef("image", c.MIMEType, c.Data)
	case *mcp.AudioContent:
		return blobRef("audio", c.MIMEType, c.Data)
	case *mcp.ResourceLink:
		return map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name, "mime_type": c.MIMEType}
	case *mcp.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return map[string]any{"type": "resource"}
		}
		ref := blobRef("resource", r.MIMEType, append([]byte(r.Text), r.Blob...))
		ref["uri"] = r.URI
		return ref
	}
	return map[string]any{"type": fmt.Sprintf("%T", c)}
}

func blobRef(kind, mime string, data []byte) map[string]any {
	sum := sha256.Sum256(data)
	return map[string]any{"type": kind, "mime_type": mime, "bytes": int64(len(data)), "sha256": hex.EncodeToString(sum[:])}
}

// errorText is the text of an error result.
func errorText(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if len(parts) == 0 {
		return "the tool reported an error"
	}
	return strings.Join(parts, "\n")
}

// PinDifference says how a live tool differs from its pin: its
// description, or the first places where its input schema does.
func PinDifference(pin *dsl.MCPPin, live *mcp.Tool) string {
	var diffs []string
	if live.Description != pin.Description {
		diffs = append(diffs, fmt.Sprintf("its description is now %q (pinned: %q)", clip(live.Description), clip(pin.Description)))
	}
	jsonDiff("", runner.NormalizeJSON(pin.Parameters), runner.NormalizeJSON(live.InputSchema), &diffs)
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more differences", len(diffs)-3))
	}
	return strings.Join(diffs, "; ")
}

// jsonDiff appends, for each place where a and b differ, a line that says
// how: a value changed, added or removed, at its JSON pointer.
func jsonDiff(at string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := make([]string, 0, len(am)+len(bm))
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			jsonDiff(at+"/"+k, am[k], bm[k], out)
		}
		return
	}
	as, bs := compactJSON(a), compactJSON(b)
	switch {
	case as == bs:
	case a == nil:
		*out = append(*out, fmt.Sprintf("its input schema adds %s = %s", at, clip(bs)))
	case b == nil:
		*out = append(*out, fmt.Sprintf("its input schema drops %s (pinned: %s)", at, clip(as)))
	default:
		*out = append(*out, fmt.Sprintf("its input schema has %s = %s (pinned: %s)", at, clip(bs), clip(as)))
	}
}

func compactJSON(v any) string {
	data, err := runner.MarshalJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

func clip(s string) string {
	if len(s) > 80 {
		return strings.ToValidUTF8(s[:80], "") + "…"
	}
	return s
}
