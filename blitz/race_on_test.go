//go:build race

package blitz

const raceEnabled = true
