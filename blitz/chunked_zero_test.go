package blitz

import "testing"

// TestChunkedZeroValue: the zero Chunked (not made by Chunks) is an empty view: no chunks,
// ForEach calls nothing, ReduceChunks returns identity, Chunk(0) is out of range. It used
// to fail with an integer division by zero.
func TestChunkedZeroValue(t *testing.T) {
	var c Chunked[int]
	if n := c.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
	c.ForEach(func(int, []int) { t.Error("ForEach called f on the zero Chunked") })
	if r := ReduceChunks(c, -1, func(int, []int) int { return 1 }, func(a, b int) int { return a + b }); r != -1 {
		t.Fatalf("ReduceChunks = %d, want the identity -1", r)
	}
	defer func() {
		if recover() == nil {
			t.Error("Chunk(0) of the zero Chunked did not panic")
		}
	}()
	c.Chunk(0)
}
