//go:build !unix

package netload

// raiseNoFileLimit has nothing to raise here; zero means "no known limit".
func raiseNoFileLimit() (uint64, error) { return 0, nil }
