//go:build !race

package tsync

const primsRace = false
