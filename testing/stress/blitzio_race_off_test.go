//go:build !race

package stress

const bioRaceOn = false
