package memory

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWindowSlides(t *testing.T) {
	w := newWindow(3, 100)
	w.add(100, true)
	w.add(101, false)
	w.add(101, true)
	f, j := w.sums(101)
	assert.Equal(t, [2]int64{3, 2}, [2]int64{f, j})
	w.add(103, false) // takes the place of slice 100
	f, j = w.sums(103)
	assert.Equal(t, [2]int64{3, 1}, [2]int64{f, j}, "slice 100 left the window")
	f, j = w.sums(104)
	assert.Equal(t, [2]int64{1, 0}, [2]int64{f, j}, "slice 101 left it too")
	assert.Equal(t, []bucket{{slice: 103, failures: 1}}, w.live(104))
}

func TestWindowDropsCountsOlderThanTheirBucket(t *testing.T) {
	// A count for slice 100 that reaches a bucket slice 103 already holds
	// read the clock a window ago: it is dropped, not counted over 103's.
	w := newWindow(3, 103)
	w.add(103, true)
	w.add(100, true)
	f, j := w.sums(103)
	assert.Equal(t, [2]int64{1, 1}, [2]int64{f, j})
}

func TestWindowTouchAndEvict(t *testing.T) {
	w := newWindow(3, 100)
	evicted, touched := w.evictIdle(102)
	assert.False(t, evicted)
	assert.Equal(t, int64(100), touched)
	assert.True(t, w.touch(101))
	assert.True(t, w.touch(100), "an older touch keeps the newer one")
	evicted, _ = w.evictIdle(103)
	assert.False(t, evicted, "touched at 101: idle from 104")
	evicted, _ = w.evictIdle(104)
	assert.True(t, evicted)
	assert.False(t, w.touch(105), "an evicted window takes no observation")
}

func TestWindowRestore(t *testing.T) {
	w := newWindow(3, 100)
	w.add(105, true)
	w.restore(bucket{slice: 102, failures: 5, joint: 5}) // 105 holds its place
	w.restore(bucket{slice: 104, failures: 4, joint: 1})
	w.restore(bucket{slice: 106, failures: 6, joint: 0}) // newer than anything counted
	assert.Equal(t, []bucket{{slice: 105, failures: 1, joint: 1}, {slice: 106, failures: 6}, {slice: 104, failures: 4, joint: 1}}, w.live(106))
	assert.Equal(t, int64(106), w.touched.Load())
}

func TestWindowConcurrentRotation(t *testing.T) {
	// Goroutines count in the same slice at once, the first of them in a
	// bucket that still holds an old slice: the bucket is emptied exactly
	// once, and no count is lost. Run with -race.
	const goroutines, perGoroutine, buckets = 4, 500, 4
	w := newWindow(buckets, 0)
	want := map[int64][2]int64{} // per slice: failures, joint
	for now := int64(1); now <= 3*buckets; now++ {
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < perGoroutine; i++ {
					w.add(now, i%4 == 0)
				}
			}()
		}
		// A reader while they count: joint never exceeds failures.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				f, j := w.sums(now)
				assert.LessOrEqual(t, j, f)
			}
		}()
		wg.Wait()
		want[now] = [2]int64{goroutines * perGoroutine, goroutines * perGoroutine / 4}
		var f, j int64
		for s := now - buckets + 1; s <= now; s++ {
			f, j = f+want[s][0], j+want[s][1]
		}
		gotF, gotJ := w.sums(now)
		assert.Equal(t, [2]int64{f, j}, [2]int64{gotF, gotJ}, "slice %d", now)
	}
}
