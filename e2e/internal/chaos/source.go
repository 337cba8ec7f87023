package chaos

import (
	"math/rand/v2"
	"sync"
)

// Source draws the choices of the middleware and the leaves. It is safe
// for concurrent use.
type Source interface {
	// Next returns the next draw; a choice takes it modulo its number of
	// cases.
	Next() uint64
}

// NewSeeded returns a Source drawing from a PCG generator seeded with
// seed: the same seed draws the same sequence (the calls that take the
// draws race, so a run is not replayed exactly, but a seed's mix is).
func NewSeeded(seed uint64) Source {
	return &seeded{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

type seeded struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (s *seeded) Next() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Uint64()
}

// NewBytes returns a Source whose draws are the bytes of b, one per draw,
// over again from the start once b is spent (no bytes: zeros): a fuzz
// input decoded into choices.
func NewBytes(b []byte) Source {
	return &bytesSource{b: append([]byte(nil), b...)}
}

type bytesSource struct {
	mu sync.Mutex
	b  []byte
	i  int
}

func (s *bytesSource) Next() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.b) == 0 {
		return 0
	}
	v := s.b[s.i%len(s.b)]
	s.i++
	return uint64(v)
}

// scaled returns a draw of src as a fraction of max in 256 steps: [0, max).
func scaled[D ~int64](src Source, max D) D {
	return D(src.Next()%256) * max / 256
}
