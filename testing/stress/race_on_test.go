//go:build race

package stress

const raceEnabled = true
