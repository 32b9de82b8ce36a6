package dsl

import "github.com/runner-dev/runner/runner/suggest"

// suggestName and didYouMean are the project's one did-you-mean.
var (
	suggestName = suggest.Closest
	didYouMean  = suggest.DidYouMean
)
