// Package retry configures errown's unary outbound retries for yarpc: the
// policies per callee and procedure, the retry budgets, the limit on
// attempts in flight to an overloaded callee, and the enforce and observe
// modes (Config). errown.Module (or errown.New) builds the retry middleware
// from it; BudgetView is the operators' view of a budget.
//
// In docs/DESIGN.md's data flow it is the inner of the two outbound
// middlewares: errown's egress middleware wraps it and learns from it how
// many attempts were made and whether a wanted retry was refused, to
// compute retry-criteria-satisfied (RCS).
//
// # Which calls are retried
//
// A call is retried only when a policy is configured for its callee service
// (and procedure), the policy allows more than one attempt and marks the
// procedure idempotent. A failed attempt is retried when, in this order:
//
//   - its code is one of the policy's retryable codes;
//   - the callee's error is not unclaimed (a retry was already spent below:
//     "suppressed by ownership");
//   - the callee did not ask not to be retried (the no-retry header set to
//     "true": refused, pushback);
//   - attempts are left;
//   - the request body was small enough to buffer for replay;
//   - enough of the deadline remains for the backoff plus the policy's
//     minimum remaining time (else refused, deadline);
//   - the callee's retry budget has room (else refused, budget).
//
// # Budget and backoff
//
// The budget is kept per callee service and shared by all of its policies
// (BudgetConfig): a retry that succeeds is refunded. Backoff is
// exponential with full jitter, and waits honour the call's context.
// Retried requests carry the attempt number (2, 3, ...) in the attempt
// header; the caller's request is never mutated.
//
// # Overload
//
// While a callee with a policy is overloaded, errown limits the attempts
// in flight to it and retries none of its attempts that timed out or were
// refused resource-exhausted (OverloadConfig).
//
// # Clock
//
// A budget reads the time to the nearest bucket (a tenth of the window).
// Between Start and Stop one goroutine reads the clock every tenth of a
// bucket (100ms for the default window, never more often than every 10ms)
// and calls read what it last read; without Start, or after Stop, every
// call reads the clock.
//
// # Metrics
//
// All counters are tagged callee=<service> and registered, when the
// middleware is built, for every service that has a policy, on the scope
// errown is given (errown.WithScope). docs/metrics.md says more of each.
//
//   - retry.calls: logical calls to a callee that has a policy (the
//     requests its budget counts).
//   - retry.attempts: retries sent (first attempts not included).
//   - retry.suppressed: retries not attempted because the callee's error
//     was unclaimed (enforce mode); retry.would_suppress, in observe mode,
//     those enforce mode would have stopped.
//   - retry.prevented: requests this hop's suppressions prevented (in
//     observe mode, would prevent), each suppressed retry counting the
//     callee's whole subtree (storm telemetry).
//   - retry.denied, also tagged reason: retries of a retryable error this
//     hop declined, each satisfying the retry criteria (RCS) so that
//     nobody above retries instead: budget, deadline, pushback,
//     not-idempotent, code, body-too-large, overload; and foreign-unclaimed,
//     foreign-attempts, foreign-budget, foreign-deadline, foreign-pushback,
//     foreign-code, foreign-not-idempotent, foreign-overload, a retry
//     errown did not make, refused by the innermost attempt step. For a
//     callee with no policy these are registered on first use.
//   - retry.foreign_attempts: retries errown did not make that the
//     innermost step let through, hedges included.
//   - retry.late_attempts: attempts that ended, or were sent, after their
//     call had returned (a hedge left running, an abandoned attempt); one
//     sent late is not sent.
//   - retry.starved_by_hedges, also tagged reason (budget, attempts):
//     errown's retries of failures that hedges took what they needed from.
//   - retry.would_overload: in observe mode, what the overload limit would
//     have held back or refused.
//   - retry.budget_left, a gauge: the retries the callee's budget still
//     allows in its window, updated every second between Start and Stop.
//
// # Retries errown does not make
//
// The innermost attempt step goes below every other outbound
// middleware (errown.Middleware.Apply and errown.ChainOutbound put it
// there): it sees every attempt that leaves the process, the replays of
// an application's own retry middleware included, and holds those to the
// same rules as errown's own retries.
//
// # Hedges
//
// A hedge is an attempt an application's middleware sends while another
// attempt of the same call is under way, with no failure to justify it.
// It takes nothing errown's retry of a real failure needs:
//
//   - The policy's MaxAttempts bounds errown's own attempts and the
//     replays sent after an attempt ended; a call's hedges count apart,
//     at most MaxAttempts-1 of them.
//   - Hedges withdraw at most half of what the callee's budget window
//     allows, and a call that succeeds gives its hedges' withdrawals back.
//   - A hedge errown refuses is not sent: it waits for the attempts under
//     way and answers with their outcome, never with the refusal.
//
// The bound per call path: with no budget, a hop sends at most
// 2×MaxAttempts-1 attempts per call, so a path of k hops serves its leaf
// at most the product of those per root request with a hedger at every
// hop. With a budget, the attempts past the first of the calls that do
// not succeed are at most Ratio × requests + MinPerSecond × Window per
// callee and window: a callee that fails every call gets at most 1+Ratio
// attempts per call from each hop, (1+Ratio)^k over k hops, hedges
// included. The budget view (BudgetView.Hedges,
// BudgetView.StarvedByHedges) shows the window's.
package retry
