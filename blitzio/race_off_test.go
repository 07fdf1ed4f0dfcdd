//go:build !race

package blitzio

const raceEnabled = false
