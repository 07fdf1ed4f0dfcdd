//go:build race

package stress

const bioRaceOn = true
