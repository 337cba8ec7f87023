//go:build race

package calls

// raceEnabled: the race detector drops some of what pools are given back.
const raceEnabled = true
