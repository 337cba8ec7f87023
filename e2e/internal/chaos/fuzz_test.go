package chaos_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/errown/errown/e2e/internal/chaos"
)

// FuzzChoices runs errown in process under the chaos middleware, the
// middleware's and the leaf's choices decoded from the input, one byte a
// draw: 4 requests at once, with clocks short enough for thousands
// of inputs a second. It fails on any answer delivered to a request it
// was not for, and on any crash.
func FuzzChoices(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 1, 2, 3, 4, 5},               // every action in turn
		{1, 0, 2, 255, 2, 5, 5, 3, 4, 2}, // hedges and abandons over blocked leaves
		{5, 2, 5, 1, 5, 0, 3, 2, 4, 2},   // panics at each stage, fallbacks and replays after failures
	} {
		f.Add(seed)
	}
	r := newRig(f, 300*time.Microsecond)
	f.Fuzz(func(t *testing.T, choices []byte) {
		src := chaos.NewBytes(choices)
		s := r.run(t, rigConfig{requests: 4, workers: 4, ttl: 2 * time.Millisecond, maxDelay: 200 * time.Microsecond}, src, src)
		assertClean(t, fmt.Sprintf("choices %v", choices), s)
	})
}
