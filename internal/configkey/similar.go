package configkey

import (
	"sort"
	"strings"
)

// Similar reports whether key is a likely misspelling of want: the same
// once case and the separators '_', '-', '.' and ' ' are ignored, or one
// edit away (a letter added, dropped, changed, or two neighbours swapped),
// two for a key longer than 7 letters. "Errown", "err_own", "errwon" and
// "erown" are errown misspelled; "errors" is not.
func Similar(key, want string) bool {
	a, b := normalize(key), normalize(want)
	if a == "" || b == "" {
		return false
	}
	limit := 1
	if len(b) > 7 {
		limit = 2
	}
	return distance(a, b) <= limit
}

// Closest returns the one of known that key is most likely a misspelling
// of, or "" when none is Similar.
func Closest(key string, known []string) string {
	best, bestDist := "", -1
	sorted := append([]string(nil), known...)
	sort.Strings(sorted) // ties go to the first in order, whatever known's
	for _, k := range sorted {
		if k == key || !Similar(key, k) {
			continue
		}
		if d := distance(normalize(key), normalize(k)); bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// distance is the optimal string alignment distance between a and b, by
// runes: insertions, deletions, substitutions and transpositions of
// neighbours, each one edit.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
