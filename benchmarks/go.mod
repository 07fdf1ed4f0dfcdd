module github.com/blitzgo/blitz/benchmarks

go 1.25.0

require (
	github.com/blitzgo/blitz/blitz v0.1.0
	github.com/blitzgo/blitz/blitzio v0.1.0
	github.com/blitzgo/blitz/shared/lockfree v0.1.0
)

require (
	github.com/cloudwego/netpoll v0.7.2
	github.com/valyala/fasthttp v1.70.0
	golang.org/x/sync v0.19.0
)

require (
	github.com/andybalholm/brotli v1.2.1 // indirect
	github.com/bytedance/gopkg v0.1.1 // indirect
	github.com/cloudwego/gopkg v0.1.4 // indirect
	github.com/klauspost/compress v1.18.5 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

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
