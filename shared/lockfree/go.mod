module github.com/blitzgo/blitz/shared/lockfree

go 1.25
