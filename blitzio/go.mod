module github.com/blitzgo/blitz/blitzio

go 1.25.0

require (
	github.com/blitzgo/blitz/shared/lockfree v0.1.0
	golang.org/x/sync v0.19.0
	golang.org/x/sys v0.47.0
)

// Local development and CI build against the sibling folder. The replace is ignored by
// users who depend on this module; they get the tagged shared/lockfree release.
replace github.com/blitzgo/blitz/shared/lockfree => ../shared/lockfree
