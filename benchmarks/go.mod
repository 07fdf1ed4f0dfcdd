module github.com/blitzgo/blitz/benchmarks

go 1.25

require (
	github.com/blitzgo/blitz/blitz v0.1.0
	github.com/blitzgo/blitz/blitzio v0.1.0
	github.com/blitzgo/blitz/shared/lockfree v0.1.0
)

require golang.org/x/sync v0.19.0

require (
	github.com/sourcegraph/conc v0.3.0
	go.uber.org/atomic v1.7.0 // indirect
	go.uber.org/multierr v1.9.0 // indirect
)

replace (
	github.com/blitzgo/blitz/blitz => ../blitz
	github.com/blitzgo/blitz/blitzio => ../blitzio
	github.com/blitzgo/blitz/shared/lockfree => ../shared/lockfree
)
