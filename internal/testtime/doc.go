// Package testtime scales the time bounds errown's timing tests assert
// (a deadline to wait for, a recovery's delay, a latency's ceiling) by a
// factor CI sets in ERROWN_TEST_TIMEOUT_SCALE, as zap's internal/ztest
// scales its timeouts by TEST_TIMEOUT_SCALE: a slow or shared runner, or
// a -race run, widens what a test judges instead of retrying it until it
// passes.
//
// Only bounds scale, never what a test sets up: a topology's attempt
// timeouts and service times stay as written, so that the test runs the
// same experiment on every machine and only allows it more time.
package testtime
