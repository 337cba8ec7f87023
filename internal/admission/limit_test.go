package admission

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNext(t *testing.T) {
	b := bounds{min: 1, max: 100}
	ms := time.Millisecond
	tests := []struct {
		name        string
		give        estimate
		answer      answer
		b           bounds
		wantLimit   float64
		wantService time.Duration
		wantGen     uint32
		wantLevel   float64
		wantBefore  float64
	}{
		{
			name:   "the first answer sets the service time",
			give:   estimate{limit: 8},
			answer: answer{latency: 5 * ms, remaining: 58 * ms, inflight: 1},
			b:      b, wantLimit: 8, wantService: 5 * ms,
		},
		{
			name:   "an answer in time moves the service time",
			give:   estimate{limit: 8, service: 10 * ms},
			answer: answer{latency: 18 * ms, remaining: 58 * ms, inflight: 1},
			b:      b, wantLimit: 8, wantService: 11 * ms,
		},
		{
			name:   "binding, room for one more behind it: one per limit",
			give:   estimate{limit: 8, service: 5 * ms, gen: 1},
			answer: answer{latency: 5 * ms, remaining: 58 * ms, inflight: 8, binding: true},
			b:      b, wantLimit: 8 + 1.0/8, wantService: 5 * ms, wantGen: 1,
		},
		{
			name:   "binding, some room, after a late answer: a share",
			give:   estimate{limit: 2, service: 40 * ms, cut: true, gen: 1},
			answer: answer{latency: 40 * ms, remaining: 60 * ms, inflight: 2, binding: true},
			b:      b, wantLimit: 2 + (0.9*60/40-1)/2, wantService: 40 * ms, wantGen: 1,
		},
		{
			name:   "binding, no room, after a late answer: the least step",
			give:   estimate{limit: 2, service: 50 * ms, cut: true, gen: 1},
			answer: answer{latency: 50 * ms, remaining: 52 * ms, inflight: 2, binding: true},
			b:      b, wantLimit: 2 + _minStep/2, wantService: 50 * ms, wantGen: 1,
		},
		{
			name:   "binding, no room, no queue and no late answer since the jump: one per limit",
			give:   estimate{limit: 2, service: 50 * ms, gen: 1},
			answer: answer{latency: 50 * ms, remaining: 52 * ms, inflight: 2, binding: true},
			b:      b, wantLimit: 2.5, wantService: 50 * ms, wantGen: 1,
		},
		{
			name:   "binding, no room, a queue: the least step",
			give:   estimate{limit: 2, service: 40 * ms, gen: 1},
			answer: answer{latency: 50 * ms, remaining: 52 * ms, inflight: 2, binding: true},
			b:      b, wantLimit: 2 + _minStep/2, wantService: 41250 * time.Microsecond, wantGen: 1,
		},
		{
			name:   "not binding: the limit is not proved",
			give:   estimate{limit: 8, service: 5 * ms},
			answer: answer{latency: 5 * ms, remaining: 58 * ms, inflight: 3},
			b:      b, wantLimit: 8, wantService: 5 * ms,
		},
		{
			name:   "late: to those served at its admission, less itself",
			give:   estimate{limit: 3.5, service: 50 * ms, gen: 4},
			answer: answer{latency: 90 * ms, remaining: 58 * ms, inflight: 3, finished: 3, gen: 4},
			b:      b, wantLimit: 2, wantService: 50 * ms, wantGen: 5,
		},
		{
			name:   "late after a long queue: to what the service finishes in the time given",
			give:   estimate{limit: 12, service: 5 * ms},
			answer: answer{latency: 200 * ms, remaining: 58 * ms, inflight: 10, finished: 7},
			b:      b, wantLimit: 3, wantService: 5 * ms, wantGen: 1, wantBefore: 12, // ⌈8·58/200⌉
		},
		{
			name:   "late after a queue shorter than the service time: to those served at its admission, less itself",
			give:   estimate{limit: 5.8, service: 51 * ms, gen: 1},
			answer: answer{latency: 94 * ms, remaining: 52 * ms, inflight: 5, finished: 4, gen: 1},
			b:      b, wantLimit: 4, wantService: 51 * ms, wantGen: 2, // not ⌈5·52/94⌉ = 3
		},
		{
			name:   "late, the service slowed: the limit to come back to is kept",
			give:   estimate{limit: 12, service: 5 * ms},
			answer: answer{latency: 50 * ms, remaining: 28 * ms, inflight: 3},
			b:      b, wantLimit: 2, wantService: 5 * ms, wantGen: 1, wantBefore: 12,
		},
		{
			name:   "late, admitted before the latest cut: no second cut",
			give:   estimate{limit: 2, service: 50 * ms, gen: 5},
			answer: answer{latency: 90 * ms, remaining: 58 * ms, inflight: 2, gen: 4},
			b:      b, wantLimit: 2, wantService: 50 * ms, wantGen: 5,
		},
		{
			name:   "late within the slack of the service time: the caller gave too little",
			give:   estimate{limit: 3, service: 50 * ms},
			answer: answer{latency: 55 * ms, remaining: 52 * ms, inflight: 3},
			b:      b, wantLimit: 3, wantService: 50 * ms,
		},
		{
			name:   "the service slowed: the limit scales down with it",
			give:   estimate{limit: 16, service: 5 * ms},
			answer: answer{latency: 50 * ms, remaining: 58 * ms, inflight: 1},
			b:      b, wantLimit: 1.6, wantService: 50 * ms, wantGen: 1, wantLevel: 1, wantBefore: 16,
		},
		{
			name:   "the service slowed: not below what answered in time together",
			give:   estimate{limit: 8, service: 5 * ms},
			answer: answer{latency: 50 * ms, remaining: 58 * ms, inflight: 1, finished: 2},
			b:      b, wantLimit: 3, wantService: 50 * ms, wantGen: 1, wantLevel: 3, wantBefore: 8,
		},
		{
			name:   "the service slowed, the limit held by what answered beside it: no cut",
			give:   estimate{limit: 3, service: 5 * ms, gen: 2},
			answer: answer{latency: 50 * ms, remaining: 58 * ms, inflight: 3, gen: 2},
			b:      b, wantLimit: 3, wantService: 50 * ms, wantGen: 2, wantLevel: 3, wantBefore: 3,
		},
		{
			name:   "the service is quicker: its time follows at once",
			give:   estimate{limit: 2, service: 50 * ms, gen: 1},
			answer: answer{latency: 5 * ms, remaining: 58 * ms, inflight: 2, binding: true},
			b:      b, wantLimit: 2.5, wantService: 5 * ms, wantGen: 1,
		},
		{
			name:   "the service came back from its jump: so does the limit, by the ratio",
			give:   estimate{limit: 2, service: 50 * ms, before: 40},
			answer: answer{latency: 10 * ms, remaining: 58 * ms, inflight: 2},
			b:      b, wantLimit: 10, wantService: 10 * ms, wantLevel: 10,
		},
		{
			name:   "the service came back from its jump: the limit, no higher than before it",
			give:   estimate{limit: 2, service: 50 * ms, before: 12},
			answer: answer{latency: 5 * ms, remaining: 58 * ms, inflight: 2},
			b:      b, wantLimit: 12, wantService: 5 * ms, wantLevel: 12,
		},
		{
			name:   "no deadline, no queue: one per limit",
			give:   estimate{limit: 4, service: 10 * ms, gen: 1},
			answer: answer{latency: 10 * ms, inflight: 4, binding: true},
			b:      b, wantLimit: 4.25, wantService: 10 * ms, wantGen: 1,
		},
		{
			name:   "a limit's worth of binding answers in time in a row proves the level",
			give:   estimate{limit: 4, service: 50 * ms, run: 3, cut: true, gen: 1},
			answer: answer{latency: 50 * ms, remaining: 58 * ms, inflight: 4, binding: true},
			b:      b, wantLimit: 4 + (0.9*58/50-1)/4, wantService: 50 * ms, wantLevel: 4, wantGen: 1,
		},
		{
			name:   "late below the level: the level stays, to be tried again",
			give:   estimate{limit: 4, service: 50 * ms, level: 4, gen: 2},
			answer: answer{latency: 70 * ms, remaining: 58 * ms, inflight: 4, finished: 4, gen: 2},
			b:      b, wantLimit: 3, wantService: 50 * ms, wantGen: 3, wantLevel: 4,
		},
		{
			name:   "below the level proved: one per limit, whatever the room",
			give:   estimate{limit: 3, service: 50 * ms, level: 4, retry: true, gen: 3},
			answer: answer{latency: 50 * ms, remaining: 58 * ms, inflight: 3, binding: true, gen: 3},
			b:      b, wantLimit: 3 + 1.0/3, wantService: 50 * ms, wantGen: 3, wantLevel: 4,
		},
		{
			name:   "the level tried again does not hold: one less",
			give:   estimate{limit: 3, service: 50 * ms, level: 3, retry: true, gen: 3},
			answer: answer{latency: 90 * ms, remaining: 58 * ms, inflight: 3, finished: 3, gen: 3},
			b:      b, wantLimit: 2, wantService: 50 * ms, wantGen: 4, wantLevel: 2,
		},
		{
			name:   "the service slowed: nothing proved stays, its limit the level to try",
			give:   estimate{limit: 8, service: 5 * ms, level: 8},
			answer: answer{latency: 50 * ms, remaining: 58 * ms, inflight: 1, finished: 2},
			b:      b, wantLimit: 3, wantService: 50 * ms, wantGen: 1, wantLevel: 3, wantBefore: 8,
		},
		{
			name:   "late at the level the jump set: it did not hold",
			give:   estimate{limit: 5, service: 50 * ms, level: 5, retry: true, gen: 1},
			answer: answer{latency: 90 * ms, remaining: 58 * ms, inflight: 5, finished: 5, gen: 1},
			b:      b, wantLimit: 4, wantService: 50 * ms, wantGen: 2, wantLevel: 4,
		},
		{
			name:   "the floor of the limit holds",
			give:   estimate{limit: 3, service: 50 * ms},
			answer: answer{latency: 90 * ms, remaining: 58 * ms, inflight: 2},
			b:      bounds{min: 2, max: 100}, wantLimit: 2, wantService: 50 * ms, wantGen: 1,
		},
		{
			name:   "slow start, binding, room: one more per answer",
			give:   estimate{limit: 8, service: 5 * ms},
			answer: answer{latency: 5 * ms, remaining: 58 * ms, inflight: 8, binding: true},
			b:      b, wantLimit: 9, wantService: 5 * ms,
		},
		{
			name:   "slow start, binding, some room: the room",
			give:   estimate{limit: 8, service: 40 * ms, cut: true},
			answer: answer{latency: 40 * ms, remaining: 60 * ms, inflight: 8, binding: true},
			b:      b, wantLimit: 8 + (0.9*60/40 - 1), wantService: 40 * ms,
		},
		{
			name:   "slow start ends with the service time's jump: one per limit after",
			give:   estimate{limit: 8, service: 5 * ms, before: 16},
			answer: answer{latency: 5 * ms, remaining: 58 * ms, inflight: 8, binding: true},
			b:      b, wantLimit: 8 + 1.0/8, wantService: 5 * ms, wantBefore: 16,
		},
		{
			name:   "the ceiling holds",
			give:   estimate{limit: 100, service: 5 * ms},
			answer: answer{latency: 5 * ms, remaining: 58 * ms, inflight: 100, binding: true},
			b:      b, wantLimit: 100, wantService: 5 * ms,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := next(tt.give, tt.answer, tt.b)
			assert.InDelta(t, tt.wantLimit, got.limit, 1e-9)
			assert.Equal(t, tt.wantService, got.service)
			assert.Equal(t, tt.wantGen, got.gen)
			assert.Equal(t, tt.wantLevel, got.level)
			assert.Equal(t, tt.wantBefore, got.before, "the limit to come back to")
		})
	}
}

// TestNextSettlesAtTheWorkers runs the limit against a model of a
// service of 2 workers, 50ms a request, whose callers give 58ms: a request
// admitted beside 2 others waits for a worker and answers late. The
// limit falls from the steady state's to 2 at once and stays there,
// probing 3 now and then.
func TestNextSettlesAtTheWorkers(t *testing.T) {
	const workers = 2
	ms := time.Millisecond
	e := estimate{limit: 12, service: 5 * ms}
	b := bounds{min: 1, max: 1000}
	at := map[int]int{} // answers by floor(limit)
	for i := range 2000 {
		n := int(e.limit)
		lat := 50 * ms
		if n > workers {
			lat = 75 * ms // behind a worker, half its service on average
		}
		e = next(e, answer{latency: lat, remaining: 58 * ms, inflight: n, finished: n, gen: e.gen, binding: true}, b)
		if i >= 10 {
			at[int(e.limit)]++
		}
	}
	assert.Equal(t, 2, int(e.limit))
	assert.Greater(t, at[2], 9*at[3], "at 2 most of the time: %v", at)
	assert.Len(t, at, 2, "only 2 and 3: %v", at)
}

// TestNextComesBackAfterALateAnswer runs the limit against a model of
// a service of 4 workers, 50ms a request, whose callers give 58ms, where
// a late timer now and then makes an answer of a request admitted with
// 4 served late: the limit comes back to 4 within a few answers, not the
// probe's hundred.
func TestNextComesBackAfterALateAnswer(t *testing.T) {
	const workers = 4
	ms := time.Millisecond
	e := estimate{limit: 12, service: 5 * ms}
	b := bounds{min: 2, max: 1000}
	below := 0 // answers with the limit under the workers
	for i := range 2000 {
		n := int(e.limit)
		lat := 50 * ms
		if n > workers || i%400 == 200 {
			lat = 75 * ms // behind a worker, or a late timer
		}
		e = next(e, answer{latency: lat, remaining: 58 * ms, inflight: n, finished: n, gen: e.gen, binding: true}, b)
		if i >= 10 && int(e.limit) < workers {
			below++
		}
	}
	assert.Equal(t, workers, int(e.limit))
	assert.LessOrEqual(t, below, 5*workers, "answers under the workers after 4 late timers")
}

// TestNextSettlesAtTheWorkersByChance is TestNextSettlesAtTheWorkers
// where a request admitted beside 2 others is in time 3 times in 10 (the
// worker it waits for was near done): a level of 3 proved by chance does
// not hold the limit above the workers.
func TestNextSettlesAtTheWorkersByChance(t *testing.T) {
	const workers = 2
	ms := time.Millisecond
	rng := rand.New(rand.NewPCG(1, 2))
	e := estimate{limit: 12, service: 5 * ms}
	b := bounds{min: 1, max: 1000}
	at := map[int]int{} // answers by floor(limit)
	for i := range 20000 {
		n := int(e.limit)
		lat := 50 * ms
		if n > workers && rng.Float64() > 0.3 {
			lat = 75 * ms
		}
		e = next(e, answer{latency: lat, remaining: 58 * ms, inflight: n, finished: n, gen: e.gen, binding: true}, b)
		if i >= 10 {
			at[int(e.limit)]++
		}
	}
	assert.Greater(t, at[2], 9*at[3], "at 2 most of the time: %v", at)
	assert.Zero(t, at[1]+at[4], "only 2 and 3: %v", at)
}

func TestHeld(t *testing.T) {
	ms := time.Millisecond
	b := bounds{min: 2, max: 100}
	tests := []struct {
		name         string
		limit        int64
		service, age time.Duration
		want         int64
	}{
		{name: "no service time known", limit: 8, age: time.Second, want: 8},
		{name: "a pause within the jump", limit: 8, service: 5 * ms, age: 10 * ms, want: 8},
		{name: "past the jump: the jump's rule, age for the latency", limit: 8, service: 5 * ms, age: 11 * ms, want: 3},
		{name: "not below the floor", limit: 8, service: 5 * ms, age: 40 * ms, want: 2},
		{name: "a scheduler's pause holds nothing", limit: 8, service: 100 * time.Microsecond, age: 900 * time.Microsecond, want: 8},
		{name: "a short service, a long pause", limit: 8, service: 100 * time.Microsecond, age: 2 * ms, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, held(tt.limit, tt.service, tt.age, b))
		})
	}
}

func TestStep(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		remaining, lat, service time.Duration
		want                    float64
	}{
		{58 * ms, 5 * ms, 5 * ms, 1},
		{60 * ms, 40 * ms, 40 * ms, 0.9*60/40 - 1},
		{55 * ms, 50 * ms, 50 * ms, _minStep},
		{0, 10 * ms, 10 * ms, 1},
		{0, 20 * ms, 10 * ms, _minStep},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, step(tt.remaining, tt.lat, tt.service), 1e-9, "%+v", tt)
	}
}

func TestFits(t *testing.T) {
	tests := []struct {
		remaining time.Duration
		timed     bool
		service   time.Duration
		want      bool
	}{
		{0, false, time.Second, true},
		{time.Second, true, 0, true},
		{time.Second, true, time.Second, true},
		{time.Second, true, time.Second + 1, false},
		{-time.Second, true, time.Millisecond, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, fits(tt.remaining, tt.timed, tt.service), "%+v", tt)
	}
}

// TestNextFindsTheWorkersAfterAJump runs the limit against a model of a
// service of 4 workers whose service time jumps from 5ms to 50ms, its
// callers giving 58ms, where the first slow answer was admitted with 2
// served (the steady state's load, under the workers): the jump cuts the
// limit to 2, and it finds the 4 workers within a few limits' worth of
// answers, not the probe's hundreds; once the service time comes back,
// so does the limit the jump cut, at the first quick answer.
func TestNextFindsTheWorkersAfterAJump(t *testing.T) {
	const workers = 4
	ms := time.Millisecond
	b := bounds{min: 1, max: 1000}
	e := next(estimate{limit: 12, service: 5 * ms}, answer{latency: 50 * ms, remaining: 58 * ms, inflight: 2, finished: 1, binding: true}, b)
	assert.Equal(t, 2, int(e.limit), "the jump")
	found := -1
	at := map[int]int{} // answers by floor(limit), once found
	for i := range 400 {
		n := int(e.limit)
		lat := 50 * ms
		if n > workers {
			lat = 75 * ms // behind a worker
		}
		e = next(e, answer{latency: lat, remaining: 58 * ms, inflight: n, finished: n, gen: e.gen, binding: true}, b)
		if found < 0 && int(e.limit) >= workers {
			found = i
		}
		if found >= 0 {
			at[int(e.limit)]++
		}
	}
	other := 0
	for n, k := range at {
		if n != workers {
			other += k
		}
	}
	assert.Less(t, found, 3*workers, "answers until the limit found the workers")
	assert.Greater(t, at[workers], 9*other, "at the workers most of the time: %v", at)
	e = next(e, answer{latency: 5 * ms, remaining: 58 * ms, inflight: workers, gen: e.gen}, b)
	assert.Equal(t, 12, int(e.limit), "the service came back")
}
