package blitz

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// hs9FuzzShape builds the input of FuzzHostile9SortStringShapes: the strings of data split
// at the byte sep are the bases (data whole if that gives fewer than two), and each of the
// n strings (17 to 2,064) is one of them, whole or cut, drawn by a generator seeded from
// the inputs. mode picks the shape: bit 0, whole strings are copies with their own bytes;
// bit 1, cuts come from 12 fixed lengths (many duplicates of few prefixes) rather than any
// length; bit 2, one byte near the end is changed (strings equal but for a late byte);
// bits 3-4, the share of whole strings (0, 1/3, 2/3, all); bit 5, the base is repeated
// so that it is long (prefixes shared over many 7-byte levels); bits 6-7, the input is
// then sorted, reversed or put in organ-pipe order.
func hs9FuzzShape(data []byte, sep byte, n uint16, mode byte) []string {
	var bases []string
	for _, p := range bytes.Split(data, []byte{sep}) {
		bases = append(bases, string(p))
	}
	if len(bases) < 2 {
		bases = []string{string(data)}
	}
	if mode&32 != 0 {
		for i, b := range bases {
			bases[i] = strings.Repeat(b, 1+300/(len(b)+1))
		}
	}
	var h uint64 = 14695981039346656037
	for _, c := range data {
		h = (h ^ uint64(c)) * 1099511628211
	}
	r := rand.New(rand.NewPCG(h, uint64(n)<<8|uint64(mode)))
	cuts := make([]int, 12)
	for i := range cuts {
		cuts[i] = r.IntN(400)
	}
	whole := int(mode>>3&3) * 3 // out of 9
	out := make([]string, 17+int(n%2048))
	for i := range out {
		b := bases[r.IntN(len(bases))]
		s := b
		if r.IntN(9) >= whole {
			c := r.IntN(len(b) + 1)
			if mode&2 != 0 {
				c = min(len(b), cuts[r.IntN(len(cuts))])
			}
			s = b[:c]
		} else if mode&1 != 0 {
			s = strings.Clone(b)
		}
		if mode&4 != 0 && len(s) > 0 && r.IntN(2) == 0 {
			x := []byte(s)
			x[len(x)-1-r.IntN(min(len(x), 3))] += byte(1 + r.IntN(255))
			s = string(x)
		}
		out[i] = s
	}
	switch mode >> 6 {
	case 1:
		slices.Sort(out)
	case 2:
		slices.Sort(out)
		slices.Reverse(out)
	case 3:
		slices.Sort(out)
		organ := make([]string, 0, len(out))
		for i := 0; i < len(out); i += 2 {
			organ = append(organ, out[i])
		}
		for i := len(out) - 1 - len(out)%2; i > 0; i -= 2 {
			organ = append(organ, out[i])
		}
		out = organ
	}
	return out
}

// FuzzHostile9SortStringShapes checks the string sort against package slices on inputs of
// duplicates of a few strings mixed with their prefixes (the shapes that need its pivot
// turns): Sort and SortDesc in parallel with a tiny grain, the string sort run
// sequentially, the same with its budget of poor pivot turns exhausted from the start (the
// comparison sort), and SortStableByKey and SortByKey with string keys (stability checked
// exactly).
func FuzzHostile9SortStringShapes(f *testing.F) {
	f.Add([]byte("abcdefghijklmnopqrstuvwxyz,ABCDEFGHIJKLMNOPQRSTUVWXYZ,abcdefgh"), byte(','), uint16(3000), byte(0))
	f.Add([]byte("\xff\x00\x80\xc3(abc"), byte(';'), uint16(1000), byte(32|8))
	f.Add([]byte("same|same|sama"), byte('|'), uint16(500), byte(32|16|1))
	f.Add([]byte("0123456789012345678901234567890123456789"), byte('5'), uint16(2000), byte(2|4|32))
	f.Add([]byte("a"), byte('a'), uint16(100), byte(24|64))
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), byte(1), uint16(700), byte(32|8|128))
	f.Add([]byte("zyx/wvu/tsr"), byte('/'), uint16(1500), byte(32|16|2|192))
	f.Fuzz(func(t *testing.T, data []byte, sep byte, n uint16, mode byte) {
		if len(data) > 4096 {
			return
		}
		in := hs9FuzzShape(data, sep, n, mode)
		opts := fuzzOpts(t)
		checkSort3(t, "strings", in, opts)
		want := slices.Clone(in)
		slices.Sort(want)
		got := slices.Clone(in)
		hs9SortSeq(got)
		if !slices.Equal(got, want) {
			t.Fatalf("sequential string sort differs from slices.Sort")
		}
		a := make([]radixKV[uint32], len(in))
		buf := make([]radixKV[uint32], len(in))
		for i := range a {
			a[i] = radixKV[uint32]{strKey(in[i], 0), uint32(i)}
		}
		radixRecKV(nil, a, buf, 64, false)
		strSortRunLimit(nil, in, a, buf, 0, -1)
		for i := range a {
			if in[a[i].v] != want[i] || i > 0 && in[a[i].v] == in[a[i-1].v] && a[i].v < a[i-1].v {
				t.Fatalf("string sort with the comparison fallback: wrong or unstable at %d", i)
			}
		}
		recs := make([]sort3Small[string], len(in))
		for i, x := range in {
			recs[i] = sort3Small[string]{k: x, id: int32(i)}
		}
		checkKeyed3(t, "by string", recs, func(e sort3Small[string]) string { return e.k },
			func(e sort3Small[string]) int { return int(e.id) }, opts)
	})
}
