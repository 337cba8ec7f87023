package retrier

import (
	"fmt"
	"testing"
	"time"

	"github.com/errown/errown/retry"
	"github.com/stretchr/testify/assert"
)

func TestBudgetAllows(t *testing.T) {
	type give struct {
		requests, retries   int64
		ratio, minPerSecond float64
		window              time.Duration
	}
	tests := []struct {
		give give
		want bool
	}{
		// Ratio only (stormsim's 10%, no floor).
		{give{0, 0, 0.1, 0, 10 * time.Second}, false},
		{give{9, 0, 0.1, 0, 10 * time.Second}, false},
		{give{10, 0, 0.1, 0, 10 * time.Second}, true},
		{give{10, 1, 0.1, 0, 10 * time.Second}, false},
		{give{19, 1, 0.1, 0, 10 * time.Second}, false},
		{give{20, 1, 0.1, 0, 10 * time.Second}, true},
		{give{100, 9, 0.1, 0, 10 * time.Second}, true},
		{give{100, 10, 0.1, 0, 10 * time.Second}, false},
		{give{1000, 99, 0.1, 0, 10 * time.Second}, true},
		{give{1000, 100, 0.1, 0, 10 * time.Second}, false},
		// Float rounding: 0.3 × 10 is 2.9999999999999996 in float64.
		{give{10, 2, 0.3, 0, 10 * time.Second}, true},
		{give{10, 3, 0.3, 0, 10 * time.Second}, false},
		{give{3, 0, 1.0 / 3, 0, 10 * time.Second}, true},
		// Floor only: minPerSecond × window seconds.
		{give{0, 0, 0, 10, 10 * time.Second}, true},
		{give{0, 99, 0, 10, 10 * time.Second}, true},
		{give{0, 100, 0, 10, 10 * time.Second}, false},
		{give{0, 0, 0, 10, 100 * time.Millisecond}, true},
		{give{0, 1, 0, 10, 100 * time.Millisecond}, false},
		{give{0, 0, 0, 0.05, 10 * time.Second}, false},
		{give{0, 0, 0, 0.05, 20 * time.Second}, true},
		// Ratio and floor add up (the defaults).
		{give{1000, 199, 0.1, 10, 10 * time.Second}, true},
		{give{1000, 200, 0.1, 10, 10 * time.Second}, false},
		{give{0, 100, 0.1, 10, 10 * time.Second}, false},
		{give{10, 100, 0.1, 10, 10 * time.Second}, true},
		// No budget at all.
		{give{0, 0, 0, 0, 10 * time.Second}, false},
		{give{1 << 40, 0, 0, 0, 10 * time.Second}, false},
		// Largest ratio.
		{give{1, 999, 1000, 0, 10 * time.Second}, true},
		{give{1, 1000, 1000, 0, 10 * time.Second}, false},
		// Retries counted beyond what is allowed (budget config changed).
		{give{10, 50, 0.1, 0, 10 * time.Second}, false},
	}
	for _, tt := range tests {
		g := tt.give
		t.Run(fmt.Sprintf("%d_requests_%d_retries_ratio_%v_floor_%v_window_%v", g.requests, g.retries, g.ratio, g.minPerSecond, g.window), func(t *testing.T) {
			assert.Equal(t, tt.want, BudgetAllows(g.requests, g.retries, g.ratio, g.minPerSecond, g.window), "BudgetAllows(%+v)", g)
		})
	}
}

// budgetStep advances the clock, deposits requests, then tries withdrawals.
type budgetStep struct {
	advance   time.Duration
	deposits  int
	withdraws int
	want      []bool // result of each withdrawal
}

func TestBudget(t *testing.T) {
	tests := []struct {
		name  string
		give  retry.BudgetConfig
		steps []budgetStep
	}{
		{
			name: "ratio only",
			give: retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Window: 10 * time.Second},
			steps: []budgetStep{
				{deposits: 9, withdraws: 1, want: []bool{false}},
				{deposits: 1, withdraws: 2, want: []bool{true, false}},
				{deposits: 10, withdraws: 2, want: []bool{true, false}},
			},
		},
		{
			name: "refused withdrawals count nothing",
			give: retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Window: 10 * time.Second},
			steps: []budgetStep{
				{deposits: 5, withdraws: 5, want: []bool{false, false, false, false, false}},
				{deposits: 5, withdraws: 1, want: []bool{true}},
			},
		},
		{
			name: "window slides bucket by bucket",
			give: retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Window: 10 * time.Second},
			steps: []budgetStep{
				{deposits: 10, withdraws: 1, want: []bool{true}},
				// 9.5s later the first bucket still counts: 10 requests, 1 retry.
				{advance: 9500 * time.Millisecond, deposits: 9, withdraws: 1, want: []bool{false}},
				// At 10s it has slid out: 9 requests, no retries.
				{advance: 500 * time.Millisecond, withdraws: 1, want: []bool{false}},
				{deposits: 1, withdraws: 2, want: []bool{true, false}},
				// Long idle: everything slid out.
				{advance: time.Hour, withdraws: 1, want: []bool{false}},
			},
		},
		{
			name: "floor per second of window",
			give: retry.BudgetConfig{Ratio: 0.1, MinPerSecond: 0.5, Window: 4 * time.Second},
			steps: []budgetStep{
				{withdraws: 3, want: []bool{true, true, false}},
				{advance: 4 * time.Second, withdraws: 3, want: []bool{true, true, false}},
			},
		},
		{
			name: "disabled allows everything",
			give: retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Window: time.Second, Disabled: true},
			steps: []budgetStep{
				{withdraws: 3, want: []bool{true, true, true}},
			},
		},
		{
			name: "clock stepping back does not rewind the window",
			give: retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Window: 10 * time.Second},
			steps: []budgetStep{
				{advance: 5 * time.Second, deposits: 10, withdraws: 1, want: []bool{true}},
				{advance: -5 * time.Second, deposits: 10, withdraws: 2, want: []bool{true, false}},
			},
		},
		{
			name: "window shorter than its buckets",
			give: retry.BudgetConfig{Ratio: 1, NoFloor: true, Window: 5},
			steps: []budgetStep{
				{deposits: 1, withdraws: 2, want: []bool{true, false}},
				{advance: 5, withdraws: 1, want: []bool{false}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			b := newBudget(tt.give, newBudgetClock(clock.Now, 0, nil))
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				for range s.deposits {
					b.deposit()
				}
				got := make([]bool, s.withdraws)
				for j := range got {
					got[j] = b.tryWithdraw()
				}
				assert.Equal(t, s.want, got, "step %d: withdrawals", i)
			}
		})
	}
}

func TestBudgetConcurrent(t *testing.T) {
	b := newBudget(retry.BudgetConfig{Ratio: 0.1, NoFloor: true, Window: time.Second}, newBudgetClock(nil, 0, nil))
	const goroutines, each = 8, 100
	granted := make(chan int, goroutines)
	for range goroutines {
		go func() {
			n := 0
			for range each {
				b.deposit()
				if b.tryWithdraw() {
					n++
				}
			}
			granted <- n
		}()
	}
	total := 0
	for range goroutines {
		total += <-granted
	}
	// The window is a second long and the test far shorter, but a slow
	// machine may slide buckets out: never more than 10% are granted.
	assert.LessOrEqual(t, total, goroutines*each/10, "retries granted for %d requests, want at most 10%%", goroutines*each)
}

// A long outage on a fake clock: an hour (360 windows) in which every one
// of 20 requests a second wants a retry, then the callee is back. Each
// window grants exactly the budget's allowance, 10% of its requests plus
// its floor, never more; a window after the outage's end the budget
// counts no retry and grants its whole allowance again.
func TestBudgetLongOutage(t *testing.T) {
	const (
		perSecond = 20
		window    = 10 * time.Second
		allowance = perSecond*10/10 + 1*10 // ratio (10%) × requests + floor × seconds
	)
	clock := newClock()
	b := newBudget(retry.BudgetConfig{Ratio: 0.1, MinPerSecond: 1, Window: window}, newBudgetClock(clock.Now, 0, nil))
	// second is the next second's requests, each asking for a retry
	// when wantRetry.
	second := func(wantRetry bool) (granted int) {
		clock.Advance(time.Second)
		for range perSecond {
			b.deposit()
			if wantRetry && b.tryWithdraw() {
				granted++
			}
		}
		return granted
	}

	var grants []int
	for range 3600 {
		grants = append(grants, second(true))
	}
	for s := 9; s < len(grants); s++ {
		sum := 0
		for _, g := range grants[s-9 : s+1] {
			sum += g
		}
		if sum != allowance {
			t.Fatalf("the window ending at second %d of the outage granted %d retries, want the allowance, %d", s, sum, allowance)
		}
	}

	for range 10 { // a window of traffic with the callee back
		if g := second(false); g != 0 {
			t.Fatalf("granted %d retries nobody asked for", g)
		}
	}
	requests, retries := b.counts()
	if requests != perSecond*10 || retries != 0 {
		t.Errorf("a window after the outage: %d requests, %d retries in the window, want %d and 0", requests, retries, perSecond*10)
	}
	granted := 0
	for b.tryWithdraw() {
		granted++
	}
	if granted != allowance {
		t.Errorf("a window after the outage the budget grants %d retries, want its allowance, %d", granted, allowance)
	}
}

// counts returns the requests and retries in the window now.
func (b *budget) counts() (requests, retries int64) {
	w := b.inWindow()
	return w.requests, w.retries
}
