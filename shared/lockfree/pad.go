package lockfree

import "sync/atomic"

// CacheLineSize is the cache line size assumed for padding, in bytes.
//
// 64 bytes is the line size of current x86-64 and most arm64 cores. Hot atomics that
// different cores write are placed CacheLineSize apart so a write by one core does not
// invalidate the line another core is reading (false sharing).
const CacheLineSize = 64

// CachePad is a full cache line of padding. Put one between fields that different
// goroutines write concurrently.
type CachePad [CacheLineSize]byte

// PaddedInt64 is an atomic.Int64 that occupies a cache line of its own when it is placed
// at a cache-line-aligned offset (or between two CachePad fields).
type PaddedInt64 struct {
	atomic.Int64
	_ [CacheLineSize - 8]byte
}

// PaddedUint64 is an atomic.Uint64 padded to a full cache line.
type PaddedUint64 struct {
	atomic.Uint64
	_ [CacheLineSize - 8]byte
}

// PaddedUint32 is an atomic.Uint32 padded to a full cache line.
type PaddedUint32 struct {
	atomic.Uint32
	_ [CacheLineSize - 4]byte
}

// PaddedBool is an atomic.Bool padded to a full cache line.
type PaddedBool struct {
	atomic.Bool
	_ [CacheLineSize - 4]byte
}
