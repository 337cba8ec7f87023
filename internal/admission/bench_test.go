package admission

import (
	"context"
	"testing"
	"time"
)

// BenchmarkControllerSteady is the steady path: a request admitted under
// the limit with nobody queued and answered at once, with and without a
// deadline, with and without a root key (AdmitRoot), one at a time and
// in parallel.
func BenchmarkControllerSteady(b *testing.B) {
	for _, bb := range []struct {
		name    string
		timeout time.Duration // 0: no deadline
		root    uint64        // 0: none
	}{
		{name: "no deadline"},
		{name: "deadline", timeout: time.Hour},
		{name: "root key", root: 0x9e3779b97f4a7c15},
	} {
		ctx := context.Background()
		if bb.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, bb.timeout)
			defer cancel()
		}
		b.Run(bb.name, func(b *testing.B) {
			c := New(Config{MaxQueue: 32, MinLimit: 2, MaxLimit: 1000})
			b.ReportAllocs()
			for b.Loop() {
				tk, _, _ := c.AdmitRoot(ctx, PriorityFirst, bb.root)
				c.Done(tk)
			}
		})
		b.Run(bb.name+"/parallel", func(b *testing.B) {
			c := New(Config{MaxQueue: 32, MinLimit: 2, MaxLimit: 1000})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tk, _, _ := c.AdmitRoot(ctx, PriorityFirst, bb.root)
					c.Done(tk)
				}
			})
		})
	}
}
