package blitz

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"sync"
	"testing"
)

// Fuzz targets for the radix paths: Sort of every key width (signed, unsigned, float with
// NaN, -0 and infinities), Sort of strings (zero bytes, shared prefixes, duplicates), and
// the keyed sorts (stability checked exactly against slices.SortStableFunc). fuzzOpts
// gives a tiny grain, so that even short inputs take the parallel radix paths.

func FuzzSortRadix(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	var nan []byte
	for _, x := range []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), -1, 1, math.NaN()} {
		nan = binary.LittleEndian.AppendUint64(nan, math.Float64bits(x))
	}
	f.Add(nan)
	f.Add(bytes.Repeat([]byte{7}, 200))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := fuzzOpts(t)
		var u64 []uint64
		var i32 []int32
		var f64 []float64
		var f32 []float32
		var i16 []int16
		for b := data; len(b) >= 8; b = b[8:] {
			x := binary.LittleEndian.Uint64(b)
			u64 = append(u64, x)
			i32 = append(i32, int32(x))
			f64 = append(f64, math.Float64frombits(x))
			f32 = append(f32, math.Float32frombits(uint32(x>>32)))
		}
		for b := data; len(b) >= 2; b = b[2:] {
			i16 = append(i16, int16(binary.LittleEndian.Uint16(b)))
		}
		checkSort3(t, "uint64", u64, opts)
		checkSort3(t, "int32", i32, opts)
		checkSort3(t, "float64", f64, opts)
		checkSort3(t, "float32", f32, opts)
		checkSort3(t, "int16", i16, opts)
		checkSort3(t, "uint8", slices.Clone(data), opts)
	})
}

// fuzzStrings splits data at each byte sep into strings (which keep their zero bytes).
func fuzzStrings(data []byte, sep byte) []string {
	var s []string
	for _, p := range bytes.Split(data, []byte{sep}) {
		s = append(s, string(p))
	}
	return s
}

func FuzzSortStrings(f *testing.F) {
	f.Add([]byte("abcdefgh,abcdefg,abcdefgh\x00,abcdefghi,,a,abcdefghijklmnopq,abcdefghijklmnop"), byte(','))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00|\x00\x00\x00\x00\x00\x00\x00|\x00|"), byte('|'))
	f.Add(bytes.Repeat([]byte("same prefix for all;"), 20), byte(';'))
	f.Fuzz(func(t *testing.T, data []byte, sep byte) {
		opts := fuzzOpts(t)
		in := fuzzStrings(data, sep)
		checkSort3(t, "strings", in, opts)
		// Keyed by string: stability checked exactly.
		recs := make([]sort3Small[string], len(in))
		for i, x := range in {
			recs[i] = sort3Small[string]{k: x, id: int32(i)}
		}
		checkKeyed3(t, "by string", recs, func(e sort3Small[string]) string { return e.k },
			func(e sort3Small[string]) int { return int(e.id) }, opts)
	})
}

func FuzzSortStableByKey(f *testing.F) {
	f.Add([]byte{}, uint8(3))
	f.Add([]byte{5, 5, 5, 4, 4, 4, 3, 3, 3, 2, 2, 2, 1, 1, 1, 0, 0, 0}, uint8(2))
	f.Add(bytes.Repeat([]byte{0xff, 0xf8, 0, 0, 0, 0, 0, 0x80}, 9), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, mod uint8) {
		opts := fuzzOpts(t)
		m := uint64(mod) + 1
		var raw []uint64
		for b := data; len(b) >= 8; b = b[8:] {
			raw = append(raw, binary.LittleEndian.Uint64(b))
		}
		for _, b := range data {
			raw = append(raw, uint64(b)%m)
		}
		keyed3(t, "uint64", raw, func(x uint64) uint64 { return x }, opts)
		keyed3(t, "int8", raw, func(x uint64) int8 { return int8(x) }, opts)
		keyed3(t, "float64", raw, func(x uint64) float64 {
			if x < 256 {
				return float64(x) - 128
			}
			return math.Float64frombits(x)
		}, opts)
		keyed3(t, "float32", raw, func(x uint64) float32 { return math.Float32frombits(uint32(x) | uint32(x>>32)) }, opts)
	})
}

// TestSort3ConcurrentSorts runs radix sorts of every kind from several goroutines at once:
// they share the cached scratch buffer, which one sort takes out of the cache for its
// duration, so no two sorts may ever write the same buffer (the race detector and the
// results would show it).
func TestSort3ConcurrentSorts(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	n := 3*radixParMin + 7
	keys := sort3Keys(9, n)["random"]
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for g := range 6 {
		wg.Go(func() {
			for range 3 {
				switch g % 3 {
				case 0:
					s := slices.Clone(keys)
					Sort(s, WithPool(p))
					if !slices.IsSorted(s) {
						errs <- "Sort"
					}
				case 1:
					recs := make([]sort3Small[uint64], n)
					for i, k := range keys {
						recs[i] = sort3Small[uint64]{k: k % 1000, id: int32(i)}
					}
					SortStableByKey(recs, func(e sort3Small[uint64]) uint64 { return e.k }, WithPool(p))
					if !slices.IsSortedFunc(recs, func(a, b sort3Small[uint64]) int {
						return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.id, b.id))
					}) {
						errs <- "SortStableByKey"
					}
				default:
					s := make([]float64, n)
					for i, k := range keys {
						s[i] = sort3Float(k)
					}
					Sort(s, WithPool(p))
					if !slices.IsSortedFunc(s, cmp.Compare[float64]) {
						errs <- "Sort(float64)"
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("%s: concurrent sorts produced an unsorted result", e)
	}
}
