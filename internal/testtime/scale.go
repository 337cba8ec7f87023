package testtime

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"time"
)

// ScaleEnv is the environment variable holding the factor Scale
// multiplies time bounds by: a number at least 1, 1 when unset. CI sets it
// on slow or shared runners and for -race runs.
const ScaleEnv = "ERROWN_TEST_TIMEOUT_SCALE"

var _factor = sync.OnceValues(func() (float64, error) { return parseFactor(os.Getenv(ScaleEnv)) })

func parseFactor(v string) (float64, error) {
	if v == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 1 {
		return 0, fmt.Errorf("%s: want a number at least 1, got %q", ScaleEnv, v)
	}
	return f, nil
}

// Factor returns the factor in ERROWN_TEST_TIMEOUT_SCALE, 1 when unset.
// It panics, naming the variable, on a value that is not a number at
// least 1: a test run with a bad factor would judge nothing it meant to.
func Factor() float64 {
	f, err := _factor()
	if err != nil {
		panic(err)
	}
	return f
}

// Scale returns d scaled by Factor: the bound a timing test asserts on a
// machine that runs slower than the one the bound was set on.
func Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}

// Sleep sleeps Scale(d): a unit test that lets something happen in the
// background before it looks (a goroutine reaching the wait it is to be
// found in, a report sent) waits longer on a slow machine, as zap's
// tests do with ztest.Sleep. A test that can poll for what it waits for
// polls instead.
func Sleep(d time.Duration) { time.Sleep(Scale(d)) }
