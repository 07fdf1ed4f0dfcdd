package benchmarks

import (
	"strings"
	"testing"
)

// ownPrefixes name this repository's own code: an implementation whose name starts with
// one of them is ours, whatever row it sits on.
var ownPrefixes = []string{"blitz", "lockfree", "tsync"}

// isOwnImpl reports whether an implementation's name says it is code of this
// repository (blitz, blitzio, lockfree, tsync, or net/http served over blitzio's
// adapter).
func isOwnImpl(name string) bool {
	for _, p := range ownPrefixes {
		if strings.HasPrefix(strings.ToLower(name), p) {
			return true
		}
	}
	return strings.Contains(name, "over-blitzio")
}

// TestHostile9OwnImplsAreNotBaselines: a baseline row is outside code ours is compared
// with, and the report counts its ratios as comparisons "against outside code" (the
// HTML page's "N of M comparisons won"). A row that measures another implementation of
// ours (another backend, another read path, the same function with other options) must
// carry RoleVariant or RoleReference, or ours is credited with beating itself.
func TestHostile9OwnImplsAreNotBaselines(t *testing.T) {
	for _, quick := range []bool{true, false} {
		for _, s := range Suites() {
			for _, c := range s.Cases(Config{Quick: quick}) {
				for _, b := range c.Baselines {
					if isOwnImpl(b.Name) && c.Roles[b.Name] == RoleBaseline {
						t.Errorf("suite %s case %s (quick %v): %q is our own implementation but is labelled a baseline (outside code); give it RoleVariant",
							s.Name, c.Name, quick, b.Name)
					}
				}
			}
		}
	}
}

// TestHostile9OwnImplDetector: the detector above knows our names from outside code's.
func TestHostile9OwnImplDetector(t *testing.T) {
	for name, want := range map[string]bool{
		"blitzio ring": true, "blitz 1 worker": true, "blitzio/epoll": true, "lockfree.Deque": true,
		"tsync.Mutex.TryLock": true, "net/http-over-blitzio-adapter": true,
		"goroutines": false, "net/http": false, "fasthttp": false, "sync.Mutex": false, "errgroup": false,
		"sequential": false, "conc/iter": false, "chan(256)": false, "os/exec": false,
	} {
		if got := isOwnImpl(name); got != want {
			t.Errorf("isOwnImpl(%q) = %v, want %v", name, got, want)
		}
	}
}
