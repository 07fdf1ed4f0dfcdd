//go:build race

package tsync

const raceEnabled = true
