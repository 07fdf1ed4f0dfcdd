package stream

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/blitzgo/blitz/blitzio"
)

// sendInPieces writes wire to w in random pieces of 1 to 9 bytes, yielding between
// them, then closes w's write side.
func sendInPieces(w *DuplexStream, wire []byte, seed uint64) blitzio.Future[struct{}] {
	rng := rand.New(rand.NewPCG(seed, 9))
	return blitzio.Async(func(co *blitzio.Co) struct{} {
		for off := 0; off < len(wire); {
			n := min(len(wire)-off, 1+rng.IntN(9))
			if r := blitzio.Await(co, WriteAll(w, wire[off:off+n])); r.Err != nil {
				break
			}
			off += n
			blitzio.Await(co, blitzio.YieldNow())
		}
		w.CloseWrite()
		return struct{}{}
	})
}

// nextDroppingOften reads every frame of fr, racing each Next against a yield with
// Select2, so that most Next futures are dropped part-way through a frame and the next
// call has to resume it.
func nextDroppingOften[T any](co *blitzio.Co, fr *FrameReader[T]) ([]T, int, error) {
	var got []T
	drops := 0
	for {
		sel := blitzio.Await(co, blitzio.Select2(fr.Next(), blitzio.YieldNow()))
		if sel.Index == 1 {
			drops++
			continue
		}
		if sel.V1.Err != nil {
			return got, drops, sel.V1.Err
		}
		got = append(got, sel.V1.Value)
	}
}

// TestHostile9FramesResumeAfterDroppedNext: frames arrive in pieces over a Duplex while
// the reader drops its Next futures at every yield: every line (through the resumed
// search of LinesCodec) and every length-delimited frame (under a configured header)
// comes out whole, once, in order.
func TestHostile9FramesResumeAfterDroppedNext(t *testing.T) {
	rt := newRuntime(t, 2)
	drops := 0
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var lines []string
		var wire []byte
		for i := range 60 {
			l := fmt.Sprintf("%d:%s", i, bytes.Repeat([]byte("w"), rng.IntN(300)))
			lines = append(lines, l)
			wire = append(wire, l...)
			if i%2 == 0 {
				wire = append(wire, '\r')
			}
			wire = append(wire, '\n')
		}
		a, b := Duplex(16)
		blitzio.Spawn(rt, sendInPieces(a, wire, seed))
		type out struct {
			got   []string
			drops int
			err   error
		}
		o := blockOn(t, rt, blitzio.Async(func(co *blitzio.Co) out {
			got, drops, err := nextDroppingOften(co, NewFrameReader[string](b, LinesCodec{MaxLength: 400}))
			return out{got, drops, err}
		}))
		if o.err != io.EOF || fmt.Sprint(o.got) != fmt.Sprint(lines) {
			t.Fatalf("seed %d: %d lines, %v (after %d dropped Next); want %d lines, io.EOF", seed, len(o.got), o.err, o.drops, len(lines))
		}

		codec := LengthDelimitedCodec{LengthFieldOffset: 1, LengthFieldLength: 3, LengthAdjustment: -4, NumSkip: -1, LittleEndian: true}
		var frames [][]byte
		wire = nil
		for i := range 60 {
			f := append([]byte{byte(i), 0, 0, 0}, bytes.Repeat([]byte{byte(i)}, rng.IntN(200))...)
			var err error
			if wire, err = codec.Encode(wire, f); err != nil {
				t.Fatal(err)
			}
			frames = append(frames, wire[len(wire)-len(f):])
		}
		a, b = Duplex(16)
		blitzio.Spawn(rt, sendInPieces(a, wire, seed))
		type outB struct {
			got   [][]byte
			drops int
			err   error
		}
		ob := blockOn(t, rt, blitzio.Async(func(co *blitzio.Co) outB {
			got, drops, err := nextDroppingOften(co, NewFrameReader[[]byte](b, codec))
			return outB{got, drops, err}
		}))
		if ob.err != io.EOF || len(ob.got) != len(frames) {
			t.Fatalf("seed %d: %d frames, %v (after %d dropped Next); want %d, io.EOF", seed, len(ob.got), ob.err, ob.drops, len(frames))
		}
		for i := range frames {
			if !bytes.Equal(ob.got[i], frames[i]) {
				t.Fatalf("seed %d: frame %d = % x, want % x", seed, i, ob.got[i], frames[i])
			}
		}
		drops += o.drops + ob.drops
	}
	// A 16-byte pipe holds less than most frames: the reader must have waited, and so
	// dropped Next futures, many times.
	if drops == 0 {
		t.Fatal("no Next was dropped: the test did not exercise resumption")
	}
	t.Logf("%d Next futures dropped part-way", drops)
}
