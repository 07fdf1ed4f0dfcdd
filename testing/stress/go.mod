module github.com/blitzgo/blitz/testing/stress

go 1.25.0

require (
	github.com/blitzgo/blitz/blitz v0.1.0
	github.com/blitzgo/blitz/blitzio v0.1.0
	golang.org/x/net v0.58.0
)

require (
	github.com/blitzgo/blitz/shared/lockfree v0.1.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace (
	github.com/blitzgo/blitz/blitz => ../../blitz
	github.com/blitzgo/blitz/blitzio => ../../blitzio
	github.com/blitzgo/blitz/shared/lockfree => ../../shared/lockfree
)
