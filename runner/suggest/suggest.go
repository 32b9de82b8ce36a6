// Package suggest finds the name a mistyped one most likely meant: the
// one did-you-mean of validate, the CLI and the server.
package suggest

import "strings"

// maxLen bounds the names Closest compares (edit distance is quadratic).
const maxLen = 64

// Closest returns the candidate closest to name, or "" when none is close
// enough to be a likely typo.
func Closest(name string, candidates []string) string {
	if len(name) > maxLen {
		return ""
	}
	best, bestDist := "", len(name)/3+2
	for _, c := range candidates {
		if len(c) > maxLen {
			continue
		}
		d := levenshtein(strings.ToLower(name), strings.ToLower(c))
		if d < bestDist || (d == bestDist && best != "" && c < best) {
			best, bestDist = c, d
		}
	}
	if best == "" || levenshtein(name, best) > len(best)/2+1 {
		return ""
	}
	return best
}

// DidYouMean formats a hint for Closest's answer, or "" when there is none.
func DidYouMean(name string, candidates []string) string {
	if s := Closest(name, candidates); s != "" {
		return `did you mean "` + s + `"?`
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
