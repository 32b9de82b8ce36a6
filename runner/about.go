package runner

// About is what a graph's definitions say about it beyond its Description
// and InputSchema, for the people and tools that show it (the server's
// assistant pages); the runtime never reads it.
type About struct {
	// Nodes holds each node's description, by name.
	Nodes map[string]string
	// Tools are the tools the graph's nodes may call, by name.
	Tools map[string]*ToolSpec
}
