//go:build race

package egress

// raceEnabled reports whether the race detector is on: its sync.Pools drop
// a quarter of what is put back, so a pooled object is now and then
// allocated anew and allocation counts gain a fraction.
const raceEnabled = true
