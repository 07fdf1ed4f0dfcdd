package blitz

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostile7SortChildEnv names the environment variable that makes the test binary, run
// again by TestHostile7SortStringLongPrefixStack, run the sorts with a small stack limit.
const hostile7SortChildEnv = "BLITZ_HOSTILE7_SORT_CHILD"

// hostile7SortChildStack is the stack limit of that child: far more than a sort of a few
// dozen strings needs, and far less than the stack the string radix sort took when it
// recursed once per 7 bytes of a shared prefix (about 49 bytes of stack per byte).
const hostile7SortChildStack = 8 << 20

// hs7PrefixInputs returns strings that share long prefixes: substrings of one long string
// (so they take little memory) that differ only in length, and the same with a distinct
// tail after the prefix, in shuffled order.
func hs7PrefixInputs(prefix int) map[string][]string {
	const n = 40
	base := strings.Repeat("\xfe", prefix) + "zyxwvutsrqponmlkjihgfedcba9876543210ZYXWVUTSRQPONMLKJIHGFEDCBA"
	lengths := make([]string, n)
	for i := range lengths {
		lengths[i] = base[:prefix+(i*7)%n]
	}
	tails := make([]string, n)
	for i := range tails {
		tails[i] = base[:prefix] + fmt.Sprintf("%03d", (i*13)%n) + base[prefix:]
	}
	equal := make([]string, n)
	for i := range equal {
		equal[i] = strings.Clone(base[:prefix])
		if i%9 == 0 {
			equal[i] = base[:prefix/2]
		}
	}
	return map[string][]string{"lengths": lengths, "tails": tails, "equal": equal}
}

// hs7CheckStringSorts sorts in with Sort (parallel, and sequential), SortByKey and
// SortStableByKey (string keys) and compares with slices.Sort / slices.SortStableFunc.
func hs7CheckStringSorts(t *testing.T, name string, in []string, opts []Option) {
	t.Helper()
	want := slices.Clone(in)
	slices.Sort(want)
	got := slices.Clone(in)
	Sort(got, opts...)
	if !slices.Equal(got, want) {
		t.Errorf("%s: Sort differs from slices.Sort", name)
	}
	type rec struct {
		s  string
		id int
	}
	recs := make([]rec, len(in))
	for i := range recs {
		recs[i] = rec{in[i], i}
	}
	wantR := slices.Clone(recs)
	slices.SortStableFunc(wantR, func(a, b rec) int { return cmp.Compare(a.s, b.s) })
	gotR := slices.Clone(recs)
	SortStableByKey(gotR, func(x rec) string { return x.s }, opts...)
	if !slices.Equal(gotR, wantR) {
		t.Errorf("%s: SortStableByKey differs from slices.SortStableFunc", name)
	}
	gotR = slices.Clone(recs)
	SortByKey(gotR, func(x rec) string { return x.s }, opts...)
	for i := range gotR {
		if gotR[i].s != wantR[i].s {
			t.Errorf("%s: SortByKey: at %d a string of length %d, want length %d", name, i, len(gotR[i].s), len(wantR[i].s))
			break
		}
	}
}

// TestHostile7SortStringLongPrefixStack: the string radix sort (Sort of strings, and the
// keyed sorts with string keys) sorted the strings that tie on a 7-byte key by recursing
// to the next 7 bytes, one recursion (about 350 bytes of stack) per 7 bytes of prefix
// shared by 17 strings or more. A few dozen strings sharing a 25 MB prefix overflowed the
// goroutine stack limit of 1 GB, a fatal error that no recover catches and that kills the
// program (slices.Sort sorts them without trouble). The child runs the sorts with an 8 MB
// limit, which 1 MB prefixes overflowed.
func TestHostile7SortStringLongPrefixStack(t *testing.T) {
	if os.Getenv(hostile7SortChildEnv) != "" {
		debug.SetMaxStack(hostile7SortChildStack)
		p := newPool(t, Config{Workers: 2})
		for name, in := range hs7PrefixInputs(1 << 20) {
			hs7CheckStringSorts(t, name+"/parallel", in, []Option{WithPool(p), WithGrain(1)})
			hs7CheckStringSorts(t, name+"/sequential", in, []Option{WithPool(p)})
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostile7SortStringLongPrefixStack$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), hostile7SortChildEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			o := out.String()
			if i := strings.Index(o, "goroutine "); i > 0 && len(o) > i+3000 {
				o = o[:i+3000] + "\n..."
			}
			if strings.Contains(o, "stack overflow") {
				t.Fatalf("sorting strings with a 1 MB shared prefix overflowed a %d MB stack (recursion per 7 bytes of prefix):\n%s",
					hostile7SortChildStack>>20, o)
			}
			t.Fatalf("child failed: %v\n%s", err, o)
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("child did not finish within 3 minutes (hang); output so far:\n%s", out.String())
	}
}

// hs7EdgeStrings returns named string inputs for the string radix sort's edge cases:
// empty strings, bytes 0x00 and 0xFF, invalid UTF-8, strings that differ only in length,
// shared prefixes ending on both sides of a 7-byte level and of a 64-byte block of the
// common-prefix scan, long duplicates with distinct backing arrays, groups that each share
// a long prefix (large enough to sort the groups in parallel), and a chain in which every
// level splits a pair off one long run.
func hs7EdgeStrings(n int) map[string][]string {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	out := map[string][]string{}
	alpha := []string{"", "\x00", "\xff", "\x00\x00", "\xff\xff", "\x80", "\xc3(", "\xed\xa0\x80", "a", "\x7f"}
	mixed := make([]string, n)
	for i := range mixed {
		var sb strings.Builder
		for range r.IntN(6) {
			sb.WriteString(alpha[r.IntN(len(alpha))])
		}
		mixed[i] = sb.String()
	}
	out["bytes"] = mixed
	for _, pl := range []int{6, 7, 8, 13, 14, 15, 63, 64, 65, 127, 128, 129, 1000} {
		for _, fill := range []string{"\x00", "\xff"} {
			p := strings.Repeat(fill, pl)
			s := make([]string, n)
			for i := range s {
				switch r.IntN(4) {
				case 0:
					s[i] = p[:r.IntN(pl+1)] // a prefix of the prefix: differs only in length
				case 1:
					s[i] = strings.Clone(p) // equal, own backing array
				default:
					s[i] = p + alpha[r.IntN(len(alpha))] + alpha[r.IntN(len(alpha))]
				}
			}
			out[fmt.Sprintf("prefix%d/%x", pl, fill[0])] = s
		}
	}
	dup := make([]string, n)
	long := strings.Repeat("q", 3000)
	for i := range dup {
		dup[i] = strings.Clone(long)
		if r.IntN(50) == 0 {
			dup[i] = long[:r.IntN(len(long))]
		}
	}
	out["duplicates"] = dup
	groups := make([]string, n)
	for i := range groups {
		groups[i] = fmt.Sprintf("%s%c%08d", strings.Repeat("g", 200), 'A'+byte(i%2), r.IntN(n))
	}
	out["groups"] = groups
	// The chain: x_i = A[i:], y_i = B[i:] with A = "a"*m + "b" + "c"*8, B = ... + "d"*8.
	// x_i and y_i tie on their key at the level whose last byte is their "b", and every
	// longer one of them ties on all-"a" keys, so each level splits one pair off a run
	// that shrinks by two.
	m := min(n/2, 3000)
	a := strings.Repeat("a", m) + "b" + strings.Repeat("c", 8)
	b := strings.Repeat("a", m) + "b" + strings.Repeat("d", 8)
	chain := make([]string, 0, 2*m)
	for i := range m {
		chain = append(chain, a[i:], b[i:])
	}
	r.Shuffle(len(chain), func(i, j int) { chain[i], chain[j] = chain[j], chain[i] })
	out["chain"] = chain
	return out
}

// TestHostile7SortStringEdgeCases checks the string sorts (Sort, SortByKey and
// SortStableByKey with string keys) against package slices on hs7EdgeStrings, at lengths
// around the string insertion cut-off and large enough for parallel runs, sequentially and
// with a tiny grain.
func TestHostile7SortStringEdgeCases(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	sizes := []int{0, 1, 2, strInsertion, strInsertion + 1, 3 * strInsertion, 1000, 2*radixParMin + 100}
	if testing.Short() || raceEnabled {
		sizes = sizes[:len(sizes)-1]
	}
	for _, n := range sizes {
		for name, in := range hs7EdgeStrings(n) {
			if n > 1000 && !strings.Contains("bytes groups duplicates chain prefix1000/ff prefix64/0", name) {
				continue // the long inputs try the kinds that reach the parallel runs
			}
			for on, opts := range map[string][]Option{"seq": {WithPool(p), WithGrain(1 << 30)}, "g1": {WithPool(p), WithGrain(1)}, "auto": {WithPool(p)}} {
				hs7CheckStringSorts(t, fmt.Sprintf("n%d/%s/%s", n, name, on), in, opts)
			}
			if t.Failed() {
				return
			}
		}
	}
}
