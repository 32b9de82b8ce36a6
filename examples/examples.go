// Package examples holds small runnable runner projects, one a folder. It
// has no code: its test validates every folder as runner validate --strict
// does and runs its Test documents as runner test does.
package examples
