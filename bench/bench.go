// Package bench holds runner's benchmarks: engine overhead per node step
// against a hand-written loop, checkpoint cost per store, and the shipped
// reference workloads; peer/ runs the same graph on LangGraph.js.
package bench
