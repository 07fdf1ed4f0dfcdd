//go:build linux || darwin || freebsd

package stream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// dialTask dials addr from a task of rt and returns the stream.
func dialTask(t *testing.T, rt *blitzio.Runtime, addr string) *blitzio.TCPStream {
	t.Helper()
	r := blockOn(t, rt, blitzio.Dial("tcp4", addr))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	t.Cleanup(func() { r.Value.Close() })
	return r.Value
}

// goListener is a plain Go listener on loopback whose first connection is handed over.
func goListener(t *testing.T) (net.Listener, <-chan net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(ch)
			return
		}
		t.Cleanup(func() { c.Close() })
		ch <- c
	}()
	return l, ch
}

// dribble writes data to w in random pieces with random pauses, then closes the write
// side.
func dribble(w net.Conn, data []byte) {
	for off := 0; off < len(data); {
		n := min(len(data)-off, 1+rand.IntN(7))
		if _, err := w.Write(data[off : off+n]); err != nil {
			return
		}
		off += n
		if rand.IntN(4) == 0 {
			time.Sleep(time.Duration(rand.IntN(400)) * time.Microsecond)
		}
	}
	w.(*net.TCPConn).CloseWrite()
}

// TestHostile2ReadLineUnderTimeoutsTCP: lines arrive over TCP in random fragments; the
// task reads them with ReadLine and ReadUntil inside very short TryTimeouts and Select2
// against a sleep, retrying on every timeout. The documented cancellation safety means
// every line comes out whole, once, in order.
func TestHostile2ReadLineUnderTimeoutsTCP(t *testing.T) {
	rt := newRuntime(t, 2)
	l, peers := goListener(t)
	s := dialTask(t, rt, l.Addr().String())
	peer := <-peers
	var want []string
	var wire strings.Builder
	for i := range 120 {
		line := fmt.Sprintf("line-%d-%s", i, strings.Repeat("z", rand.IntN(40)))
		want = append(want, line)
		if i%3 == 0 {
			wire.WriteString(line + "\r\n")
		} else {
			wire.WriteString(line + "\n")
		}
	}
	go dribble(peer, []byte(wire.String()))
	got := blockOn(t, rt, blitzio.Async(func(co *blitzio.Co) []string {
		br := NewBufReader(s, 8)
		var got []string
		timeouts := 0
		for {
			var line string
			var err error
			switch rand.IntN(3) {
			case 0:
				r := blitzio.Await(co, blitzio.TryTimeout(time.Duration(rand.IntN(300))*time.Microsecond, br.ReadLine()))
				line, err = r.Value, r.Err
			case 1:
				sel := blitzio.Await(co, blitzio.Select2(br.ReadLine(), blitzio.Sleep(time.Duration(rand.IntN(300))*time.Microsecond)))
				if sel.Index == 1 {
					err = blitzio.ErrTimeout
				} else {
					line, err = sel.V1.Value, sel.V1.Err
				}
			default:
				r := blitzio.Await(co, blitzio.TryTimeout(time.Duration(rand.IntN(300))*time.Microsecond, br.ReadUntil('\n', nil)))
				line, err = string(trimEOL(r.Value)), r.Err
				if err == io.EOF && len(r.Value) > 0 {
					err = nil
				}
			}
			if errors.Is(err, blitzio.ErrTimeout) {
				timeouts++
				continue
			}
			if err == io.EOF {
				return got
			}
			if err != nil {
				t.Errorf("read: %v", err)
				return got
			}
			got = append(got, line)
		}
	}))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %d lines, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestHostile2FrameReaderUnderTimeoutsTCP is the same for FrameReader with the
// length-delimited codec, frames including empty ones.
func TestHostile2FrameReaderUnderTimeoutsTCP(t *testing.T) {
	rt := newRuntime(t, 2)
	l, peers := goListener(t)
	s := dialTask(t, rt, l.Addr().String())
	peer := <-peers
	var want [][]byte
	var wire []byte
	for i := range 120 {
		f := bytes.Repeat([]byte{byte(i)}, rand.IntN(3)*rand.IntN(50))
		want = append(want, f)
		wire, _ = LengthDelimitedCodec{}.Encode(wire, f)
	}
	go dribble(peer, wire)
	got := blockOn(t, rt, blitzio.Async(func(co *blitzio.Co) [][]byte {
		fr := NewFrameReader[[]byte](s, LengthDelimitedCodec{MaxFrameLength: 100})
		var got [][]byte
		for {
			r := blitzio.Await(co, blitzio.TryTimeout(time.Duration(rand.IntN(300))*time.Microsecond, fr.Next()))
			if errors.Is(r.Err, blitzio.ErrTimeout) {
				continue
			}
			if r.Err == io.EOF {
				return got
			}
			if r.Err != nil {
				t.Errorf("Next: %v", r.Err)
				return got
			}
			got = append(got, r.Value)
		}
	}))
	if len(got) != len(want) {
		t.Fatalf("got %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
}

// TestHostile2ReadUnderTimeoutsThroughBufReader: stream.Read on a BufReader inside very
// short timeouts (Read is documented cancellation-safe): no byte lost or repeated.
func TestHostile2ReadUnderTimeoutsThroughBufReader(t *testing.T) {
	rt := newRuntime(t, 2)
	l, peers := goListener(t)
	s := dialTask(t, rt, l.Addr().String())
	peer := <-peers
	data := make([]byte, 6000)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	go dribble(peer, data)
	got := blockOn(t, rt, blitzio.Async(func(co *blitzio.Co) []byte {
		br := NewBufReader(s, 16)
		var got []byte
		for {
			p := make([]byte, 1+rand.IntN(40)) // sometimes larger than the buffer
			r := blitzio.Await(co, blitzio.TryTimeout(time.Duration(rand.IntN(200))*time.Microsecond, blitzio.Future[blitzio.Result[int]](Read(br, p))))
			if errors.Is(r.Err, blitzio.ErrTimeout) {
				continue
			}
			if r.Err == io.EOF {
				return got
			}
			if r.Err != nil {
				t.Errorf("Read: %v", r.Err)
				return got
			}
			got = append(got, p[:r.Value]...)
		}
	}))
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes that differ from the %d sent", len(got), len(data))
	}
}

// TestHostile2CopyBidirectionalHalfCloseTCP: a proxy task between a Go client and a Go
// server over real sockets. The client sends a request and half-closes; the server
// answers after reading EOF (which only comes if the proxy passed the half-close on)
// and then closes. The proxy ends with the exact counts, the client has the answer.
func TestHostile2CopyBidirectionalHalfCloseTCP(t *testing.T) {
	rt := newRuntime(t, 2)
	for range 5 {
		serverL, servers := goListener(t)
		proxyL, err := blitzio.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer proxyL.Close()
		proxy := blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) blitzio.Result[Copied] {
			a := blitzio.Await(co, proxyL.Accept())
			if a.Err != nil {
				return blitzio.Result[Copied]{Err: a.Err}
			}
			defer a.Value.Conn.Close()
			b := blitzio.Await(co, blitzio.Dial("tcp4", serverL.Addr().String()))
			if b.Err != nil {
				return blitzio.Result[Copied]{Err: b.Err}
			}
			defer b.Value.Close()
			return blitzio.Await(co, CopyBidirectional(a.Value.Conn, b.Value))
		}))
		request := bytes.Repeat([]byte("Q"), 100000+rand.IntN(1000))
		answer := bytes.Repeat([]byte("A"), 50000+rand.IntN(1000))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv, ok := <-servers
			if !ok {
				t.Error("no server connection")
				return
			}
			srv.SetDeadline(time.Now().Add(hostile2Watchdog))
			got, err := io.ReadAll(srv)
			if err != nil || !bytes.Equal(got, request) {
				t.Errorf("server read %d bytes, %v", len(got), err)
			}
			srv.Write(answer)
			srv.Close()
		}()
		var reply []byte
		within(t, "client through the proxy", func() {
			c, err := net.Dial("tcp4", proxyL.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(hostile2Watchdog))
			go func() {
				c.Write(request)
				c.(*net.TCPConn).CloseWrite()
			}()
			reply, err = io.ReadAll(c)
			if err != nil {
				t.Error(err)
			}
		})
		within(t, "server", wg.Wait)
		if !bytes.Equal(reply, answer) {
			t.Fatalf("client got %d bytes, want %d", len(reply), len(answer))
		}
		var res blitzio.Result[Copied]
		within(t, "proxy", func() {
			var err error
			res, err = proxy.Wait()
			if err != nil {
				t.Error(err)
			}
		})
		if res.Err != nil || res.Value.AToB != int64(len(request)) || res.Value.BToA != int64(len(answer)) {
			t.Fatalf("proxy = %+v, %v; want %d/%d", res.Value, res.Err, len(request), len(answer))
		}
	}
}

// failAfterWriter accepts up to max bytes per write, and fails once it has taken limit
// bytes in all.
type failAfterWriter struct {
	out   bytes.Buffer
	max   int
	limit int
	err   error
}

func (w *failAfterWriter) PollWrite(cx *blitzio.Context, p []byte) (blitzio.Result[int], bool) {
	if len(p) == 0 {
		return blitzio.Result[int]{}, true
	}
	if w.out.Len() >= w.limit {
		return blitzio.Result[int]{Err: w.err}, true
	}
	n := min(len(p), w.max, w.limit-w.out.Len())
	w.out.Write(p[:n])
	return blitzio.Result[int]{Value: n}, true
}

// TestHostile2CopyShortWritesAndErrors: Copy through a writer that takes a few bytes at a
// time reports exactly the bytes written; a writer error stops it with that error and
// the count of the bytes the writer did take.
func TestHostile2CopyShortWritesAndErrors(t *testing.T) {
	data := make([]byte, 100000)
	for i := range data {
		data[i] = byte(i * 13)
	}
	w := &failAfterWriter{max: 777, limit: 1 << 30}
	r := pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](Copy(w, &chunkReader{data: bytes.Clone(data), sizes: []int{1, 5000, 40000}})), 1000000)
	if r.Err != nil || r.Value != int64(len(data)) || !bytes.Equal(w.out.Bytes(), data) {
		t.Fatalf("Copy = %d, %v", r.Value, r.Err)
	}
	boom := errors.New("disk full")
	w = &failAfterWriter{max: 777, limit: 12345, err: boom}
	r = pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](CopyBuffer(w, &chunkReader{data: bytes.Clone(data), sizes: []int{3000}}, make([]byte, 1000))), 1000000)
	if r.Err != boom || r.Value != 12345 || !bytes.Equal(w.out.Bytes(), data[:12345]) {
		t.Fatalf("Copy into a failing writer = %d, %v; want 12345, disk full", r.Value, r.Err)
	}
	// a read error after some bytes: those bytes were written, the error returned
	rerr := errors.New("reset")
	w = &failAfterWriter{max: 1 << 20, limit: 1 << 30}
	r = pollUntilReady(t, blitzio.Future[blitzio.Result[int64]](Copy(w, &chunkReader{data: bytes.Clone(data[:500]), sizes: []int{100}, err: rerr})), 10000)
	if r.Err != rerr || r.Value != 500 || !bytes.Equal(w.out.Bytes(), data[:500]) {
		t.Fatalf("Copy from a failing reader = %d, %v", r.Value, r.Err)
	}
}

// TestHostile2CopyBidirectionalErrorOneSide: one side's writes fail: the future ends
// with that error instead of waiting for the other direction.
func TestHostile2CopyBidirectionalErrorOneSide(t *testing.T) {
	rt := newRuntime(t, 2)
	a, aPeer := Duplex(16)
	b, bPeer := Duplex(16)
	f := blitzio.Spawn(rt, CopyBidirectional(a, b))
	bPeer.Close() // b's reads fail? no: b reads EOF; writes to b fail
	within(t, "CopyBidirectional after a side closed", func() {
		blitzio.BlockOn(rt, blitzio.Async(func(co *blitzio.Co) struct{} {
			blitzio.Await(co, WriteAll(aPeer, []byte("to the closed side")))
			return struct{}{}
		}))
		r, err := f.Wait()
		if err != nil {
			t.Error(err)
			return
		}
		if !errors.Is(r.Err, io.ErrClosedPipe) {
			t.Errorf("CopyBidirectional = %+v, %v; want io.ErrClosedPipe", r.Value, r.Err)
		}
	})
}
