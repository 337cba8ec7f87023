package chaos_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/errown/errown/e2e/internal/chaos"
	"github.com/errown/errown/internal/outboundtest"
	"github.com/errown/errown/internal/testtime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/yarpc/api/transport"
	"go.uber.org/yarpc/yarpcerrors"
)

func newChaos(t *testing.T, cfg chaos.Config) *chaos.Middleware {
	t.Helper()
	if cfg.Source == nil {
		cfg.Source = chaos.NewSeeded(1)
	}
	m, err := chaos.New(cfg)
	require.NoError(t, err)
	return m
}

// gate is a send whose attempts block until released, each told apart by
// its number.
type gate struct {
	mu      sync.Mutex
	started []bool // alt of each attempt, in order
	release chan struct{}
	entered chan struct{}
	fail    bool
}

func newGate() *gate { return &gate{release: make(chan struct{}), entered: make(chan struct{}, 8)} }

func (g *gate) send(_ context.Context, alt bool) (int, error) {
	g.mu.Lock()
	g.started = append(g.started, alt)
	n := len(g.started)
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.release
	if g.fail && n == 1 {
		return n, errors.New("first attempt failed")
	}
	return n, nil
}

func (g *gate) attempts() []bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]bool(nil), g.started...)
}

func TestHedgeReturnsTheFirstAnswerAndLeavesTheOtherRunning(t *testing.T) {
	m := newChaos(t, chaos.Config{})
	var (
		mu       sync.Mutex
		released = map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{})}
		n        int
	)
	send := func(context.Context, bool) (int, error) {
		mu.Lock()
		n++
		me := n
		mu.Unlock()
		<-released[me]
		return me, nil
	}
	var discarded []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		r, err := chaos.DoChoice(context.Background(), m, chaos.Choice{Action: chaos.Hedge, Delay: time.Millisecond}, send,
			func(r int) { mu.Lock(); discarded = append(discarded, r); mu.Unlock() })
		assert.NoError(t, err)
		assert.Equal(t, 2, r, "the second attempt answered first")
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return n == 2 }, 5*time.Second, time.Millisecond, "a second attempt after the delay")
	close(released[2])
	<-done
	assert.Equal(t, int64(1), m.Running(), "the first attempt runs on")
	close(released[1])
	m.Wait()
	assert.Equal(t, []int{1}, discarded, "the loser's answer discarded")
	s := m.Stats()
	assert.Equal(t, int64(2), s.Sends)
	assert.Equal(t, int64(1), s.Late, "the loser ended after the call returned")
	assert.Equal(t, map[chaos.Action]int64{chaos.Hedge: 1}, s.Calls)
}

func TestHedgeSendsOnceWhenTheFirstAnswersInTime(t *testing.T) {
	m := newChaos(t, chaos.Config{})
	r, err := chaos.DoChoice(context.Background(), m, chaos.Choice{Action: chaos.Hedge, Delay: time.Hour},
		func(context.Context, bool) (int, error) { return 7, nil }, func(int) { t.Error("nothing to discard") })
	require.NoError(t, err)
	assert.Equal(t, 7, r)
	m.Wait()
	assert.Equal(t, int64(1), m.Stats().Sends)
}

func TestAbandonReturnsAtItsTimerWhileTheAttemptRuns(t *testing.T) {
	m := newChaos(t, chaos.Config{})
	g := newGate()
	start := time.Now()
	_, err := chaos.DoChoice(context.Background(), m, chaos.Choice{Action: chaos.Abandon, Delay: time.Millisecond}, g.send, func(int) {})
	assert.Equal(t, yarpcerrors.CodeDeadlineExceeded, yarpcerrors.FromError(err).Code(), "%v", err)
	assert.Less(t, time.Since(start), 5*time.Second)
	<-g.entered
	assert.Equal(t, int64(1), m.Running(), "the attempt runs on")
	close(g.release)
	m.Wait()
	assert.Equal(t, int64(1), m.Stats().Late)
}

func TestFallbackAndReplaySendAgainAfterAFailure(t *testing.T) {
	tests := []struct {
		give chaos.Action
		want []bool // alt of each attempt
	}{
		{give: chaos.Fallback, want: []bool{false, true}},
		{give: chaos.Replay, want: []bool{false, false}},
		{give: chaos.Pass, want: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.give.String(), func(t *testing.T) {
			m := newChaos(t, chaos.Config{})
			g := newGate()
			g.fail = true
			close(g.release)
			_, err := chaos.DoChoice(context.Background(), m, chaos.Choice{Action: tt.give}, g.send, func(int) {})
			if len(tt.want) == 1 {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.want, g.attempts())
		})
	}
}

func TestPanicStages(t *testing.T) {
	tests := []struct {
		stage int
		want  int // attempts sent
	}{
		{stage: chaos.PanicBefore, want: 0},
		{stage: chaos.PanicAfter, want: 1},
		{stage: chaos.PanicRunning, want: 1},
	}
	for _, tt := range tests {
		m := newChaos(t, chaos.Config{})
		g := newGate()
		close(g.release)
		assert.PanicsWithValue(t, chaos.PanicValue, func() {
			_, _ = chaos.DoChoice(context.Background(), m, chaos.Choice{Action: chaos.Panic, Stage: tt.stage}, g.send, func(int) {})
		}, "stage %d", tt.stage)
		m.Wait()
		assert.Len(t, g.attempts(), tt.want, "stage %d", tt.stage)
	}
}

// The yarpc middleware resets the body of each attempt, and a fallback
// goes to Alt of the procedure.
func TestCallResetsTheBodyOfEachAttempt(t *testing.T) {
	for _, a := range []chaos.Action{chaos.Replay, chaos.Fallback} {
		t.Run(a.String(), func(t *testing.T) {
			m := newChaos(t, chaos.Config{Actions: []chaos.Action{a}})
			out := outboundtest.New(outboundtest.Fail(yarpcerrors.UnavailableErrorf("first")), outboundtest.Succeed("answer"))
			res, err := m.Call(context.Background(), &transport.Request{Procedure: "get", Body: bytes.NewReader(chaos.Body(42))}, out)
			require.NoError(t, err)
			_ = res.Body.Close()
			want := string(chaos.Body(42))
			var bodies, procs []string
			for _, r := range out.Requests() {
				bodies, procs = append(bodies, r.Body), append(procs, r.Procedure)
			}
			assert.Equal(t, []string{want, want}, bodies)
			second := "get"
			if a == chaos.Fallback {
				second = chaos.Alt("get")
			}
			assert.Equal(t, []string{"get", second}, procs)
		})
	}
}

func TestLedger(t *testing.T) {
	tests := []struct {
		name  string
		give  chaos.Answer
		procs []string
		want  bool
	}{
		{name: "its own answer", give: chaos.Answer{Body: []byte(chaos.Echo(1, "get"))}, want: true},
		{name: "the fallback's", give: chaos.Answer{Body: []byte(chaos.Echo(1, "get-alt"))}, procs: []string{"get", "get-alt"}, want: true},
		{name: "its own error", give: chaos.Answer{Err: errors.New(chaos.Echo(1, "get") + " down"), Echo: chaos.Echo(1, "get"), Empty: true}, want: true},
		{name: "an error of nobody's", give: chaos.Answer{Err: errors.New("timeout"), Empty: true}, want: true},
		{name: "another request's body", give: chaos.Answer{Body: []byte(chaos.Echo(2, "get"))}},
		{name: "another procedure's body", give: chaos.Answer{Body: []byte(chaos.Echo(1, "put"))}},
		{name: "another request's error", give: chaos.Answer{Err: errors.New(chaos.Echo(2, "get")), Empty: true}},
		{name: "another request's header", give: chaos.Answer{Body: []byte(chaos.Echo(1, "get")), Echo: chaos.Echo(3, "get")}},
		{name: "a success without an echo", give: chaos.Answer{Body: []byte("ok")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l chaos.Ledger
			procs := tt.procs
			if procs == nil {
				procs = []string{"get"}
			}
			assert.Equal(t, tt.want, l.Check("test", 1, procs, tt.give))
			assert.Equal(t, int64(1), l.Checked())
			if tt.want {
				assert.Zero(t, l.Cross())
				assert.Empty(t, l.Samples())
			} else {
				assert.Equal(t, int64(1), l.Cross())
				assert.Len(t, l.Samples(), 1)
			}
		})
	}
}

func TestBytesSourceDecodesChoices(t *testing.T) {
	m := newChaos(t, chaos.Config{Source: chaos.NewBytes([]byte{1, 128, 5, 2}), MaxDelay: 256 * time.Microsecond})
	assert.Equal(t, chaos.Choice{Action: chaos.Hedge, Delay: 128 * time.Microsecond}, m.Choose())
	assert.Equal(t, chaos.Choice{Action: chaos.Panic, Stage: chaos.PanicRunning}, m.Choose())
	assert.Equal(t, chaos.Choice{Action: chaos.Hedge, Delay: 128 * time.Microsecond}, m.Choose(), "the bytes again from the start")
	empty := newChaos(t, chaos.Config{Source: chaos.NewBytes(nil)})
	assert.Equal(t, chaos.Choice{Action: chaos.Pass}, empty.Choose())
}

func TestNewErrors(t *testing.T) {
	_, err := chaos.New(chaos.Config{})
	assert.ErrorContains(t, err, "Source is required")
	_, err = chaos.New(chaos.Config{Source: chaos.NewSeeded(1), Actions: []chaos.Action{9}})
	assert.ErrorContains(t, err, "unknown action 9")
	_, err = chaos.NewLeaf(chaos.LeafConfig{})
	assert.ErrorContains(t, err, "Source is required")
	_, err = chaos.NewLeaf(chaos.LeafConfig{Source: chaos.NewSeeded(1), Outcomes: []chaos.Outcome{9}})
	assert.ErrorContains(t, err, "unknown outcome 9")
}

// A body that fails mid-way still fails once the middleware read it into
// memory: a truncated answer is no short success.
func TestReadResponseKeepsABodysReadError(t *testing.T) {
	broken := errors.New("unexpected EOF")
	res, a := chaos.ReadResponse(&transport.Response{Body: io.NopCloser(io.MultiReader(bytes.NewReader([]byte("1234")), errorReader{broken}))}, nil)
	assert.Equal(t, broken, a.Err)
	assert.Equal(t, []byte("1234"), a.Body)
	b, err := io.ReadAll(res.Body)
	assert.Equal(t, "1234", string(b))
	assert.ErrorIs(t, err, broken)
}

type errorReader struct{ err error }

func (r errorReader) Read([]byte) (int, error) { return 0, r.err }

// A call may reach the middleware while Wait waits (a request its caller
// gave up on, still on its way) and leave an attempt running: a call
// nothing orders after Wait. Wait allows it (under -race too: a
// WaitGroup would not, its first Add must happen before its Wait), and
// the next Wait waits for that attempt.
func TestWaitAllowsACallThatComesWhileItWaits(t *testing.T) {
	m := newChaos(t, chaos.Config{})
	abandon := chaos.Choice{Action: chaos.Abandon, Delay: time.Millisecond}
	first, late := newGate(), newGate()
	_, err := chaos.DoChoice(context.Background(), m, abandon, first.send, func(int) {})
	require.Error(t, err, "abandoned")
	<-first.entered
	lateDone := make(chan struct{})
	go func() { // started before Wait: nothing orders its call after Wait's start
		defer close(lateDone)
		testtime.Sleep(100 * time.Millisecond) // Wait waits for the first attempt
		close(first.release)
		for m.Running() > 0 {
			testtime.Sleep(time.Millisecond)
		}
		testtime.Sleep(20 * time.Millisecond) // the first attempt's goroutine ends
		_, err := chaos.DoChoice(context.Background(), m, abandon, late.send, func(int) {})
		assert.Error(t, err, "abandoned")
	}()
	m.Wait()
	<-lateDone
	<-late.entered
	assert.Equal(t, int64(1), m.Running(), "the late call's attempt runs on")
	close(late.release)
	m.Wait()
	assert.Zero(t, m.Running(), "Wait waited for the late attempt")
	assert.Equal(t, int64(2), m.Stats().Late, "both attempts ended after their calls returned")
}
