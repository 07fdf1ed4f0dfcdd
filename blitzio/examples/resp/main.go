//go:build linux || darwin || freebsd

// Command resp is a small Redis-protocol server on blitzio that redis-cli can talk to:
// PING, ECHO, SET (with EX, PX, NX, XX, KEEPTTL, GET), GET, DEL, INCR, EXPIRE (with NX,
// XX, GT, LT; each expiry a timer on the runtime's wheel) and TTL, with Redis's replies
// and error messages. Each connection is a task written as a sequential function
// (blitzio.Async) over a buffered reader and writer from package stream; pipelined
// commands are answered with one write. It stops cleanly on SIGINT or SIGTERM.
//
//	go run ./examples/resp -addr 127.0.0.1:6380
//	redis-cli -p 6380 set greeting hello
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blitzgo/blitz/blitzio"
	"github.com/blitzgo/blitz/blitzio/examples/internal/acceptloop"
	"github.com/blitzgo/blitz/blitzio/stream"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6380", "address to listen on (port 0 picks a free one)")
	flag.Parse()
	if err := run(*addr); err != nil {
		log.Fatal(err)
	}
}

// The limits of a request are Redis's defaults. None of them is allocated up front: a
// client that announces a 512 MiB argument and sends 5 bytes of it costs 5 bytes (and a
// few KiB of buffer), not 512 MiB.
const (
	maxInline = 64 << 10    // an inline command's line, and a RESP header line
	maxArgs   = 1024 * 1024 // arguments of one command
	maxBulk   = 512 << 20   // bytes of one argument (proto-max-bulk-len)
	// maxRequest bounds the bytes of all the arguments of one command
	// (client-query-buffer-limit).
	maxRequest = 1 << 30
	// bulkPrealloc is the most reserved for an argument before its bytes arrive; a
	// longer one grows with the bytes received.
	bulkPrealloc = 16 << 10
)

// store is the key space. Its lock is a plain sync.Mutex: it is never held across an
// await, only while one command runs (so that each command is atomic, as in Redis), which
// is what Tokio's docs advise too.
type store struct {
	mu     sync.Mutex
	data   map[string]entry
	origin time.Time // the store's clock started at origin, which was base on Unix time
	base   int64     // origin in Unix milliseconds
	timers uint64    // the last timer id handed out
}

type entry struct {
	val string
	// expireAt is when the key expires, in milliseconds on the store's clock (now);
	// 0: never.
	expireAt int64
	// timer is the id of the timer armed for expireAt (0: none), and stop aborts it.
	// Replacing, re-expiring or deleting the key stops its timer, so that a client
	// repeating EXPIRE does not pile up sleeping timers.
	timer uint64
	stop  func()
}

// now is the store's clock in milliseconds: Unix time when the store was made, then
// advancing with the runtime's monotonic clock (a change of the wall clock does not
// expire keys early or late). Its range is Redis's, so are its overflow checks.
func (s *store) now(rt *blitzio.Runtime) int64 {
	return s.base + rt.Now().Sub(s.origin).Milliseconds()
}

// lookup returns the key's entry, removing it first if it has expired. s.mu is held.
func (s *store) lookup(key string, now int64) (entry, bool) {
	e, ok := s.data[key]
	if ok && e.expireAt != 0 && now >= e.expireAt {
		s.remove(key, e)
		return entry{}, false
	}
	return e, ok
}

// remove deletes the key and stops its timer. s.mu is held.
func (s *store) remove(key string, e entry) {
	if e.stop != nil {
		e.stop()
	}
	delete(s.data, key)
}

// put stores e under key with the expiry at (0: none). e.stop, if set, is the timer of
// the entry e replaces (or updates): it is stopped, and a new one armed for at. s.mu is
// held.
func (s *store) put(co *blitzio.Co, rt *blitzio.Runtime, key string, e entry, at int64) {
	if e.stop != nil {
		e.stop()
	}
	e.expireAt, e.timer, e.stop = at, 0, nil
	if at != 0 {
		s.timers++
		e.timer = s.timers
		e.stop = s.arm(co, rt, key, e.timer, at)
	}
	s.data[key] = e
}

// maxTimerWait bounds one sleep of a timer: a longer expiry (EXPIRE takes up to about
// 292 million years) is reached in several sleeps, and no sleep overflows a
// time.Duration.
const maxTimerWait = 24 * time.Hour

// arm starts the timer that removes key at its expiry, and returns what stops it. GET,
// TTL and the others check the expiry too, so a key is never seen late; the timer frees
// the memory of keys nobody reads again. A timer is a small hand-written future (a
// sleep on the runtime's wheel and a few words), not a coroutine: a million keys with an
// expiry cost a million of these, not a million goroutine stacks.
func (s *store) arm(co *blitzio.Co, rt *blitzio.Runtime, key string, id uint64, at int64) func() {
	h := blitzio.Spawn(co, &expiry{s: s, rt: rt, key: key, id: id, at: at})
	h.Detach() // nobody reads its result; Abort still works
	return h.Abort
}

// expiry is the task of one key's timer: it sleeps until the key's expiry (in steps of
// at most maxTimerWait) and removes the key, unless the key was replaced or deleted
// meanwhile (its entry then has another timer id, and this timer was aborted).
type expiry struct {
	s     *store
	rt    *blitzio.Runtime
	key   string
	id    uint64
	at    int64
	sleep *blitzio.SleepFuture
}

// Poll implements blitzio.Future.
func (x *expiry) Poll(cx *blitzio.Context) (struct{}, bool) {
	for {
		if x.sleep != nil {
			if _, ok := x.sleep.Poll(cx); !ok {
				return struct{}{}, false
			}
			x.sleep = nil
		}
		x.s.mu.Lock()
		e, ok := x.s.data[x.key]
		if !ok || e.timer != x.id { // replaced or deleted since: not ours any more
			x.s.mu.Unlock()
			return struct{}{}, true
		}
		wait := x.at - x.s.now(x.rt)
		if wait <= 0 {
			delete(x.s.data, x.key)
			x.s.mu.Unlock()
			return struct{}{}, true
		}
		x.s.mu.Unlock()
		d := maxTimerWait
		if wait < int64(maxTimerWait/time.Millisecond) {
			d = time.Duration(wait) * time.Millisecond
		}
		x.sleep = blitzio.Sleep(d)
	}
}

// Drop implements blitzio.Dropper: an aborted timer leaves the wheel.
func (x *expiry) Drop() {
	if x.sleep != nil {
		x.sleep.Drop()
	}
}

func run(addr string) error {
	rt, err := blitzio.New(blitzio.Config{})
	if err != nil {
		return err
	}
	stop := blitzio.NewShutdown()
	if err := stop.TriggerOn(blitzio.SignalInterrupt, blitzio.SignalTerminate); err != nil {
		return err
	}
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return err
	}
	l, err := blitzio.ListenTCP("tcp", ta)
	if err != nil {
		return err
	}
	fmt.Printf("resp: listening on %s\n", l.Addr())
	origin := rt.Now()
	db := &store{data: map[string]entry{}, origin: origin, base: origin.UnixMilli()}
	blitzio.Spawn(rt, blitzio.Async(func(co *blitzio.Co) error {
		defer l.Close()
		// An accept error is logged and retried after a back-off (5 ms up to 1 s), as
		// net/http does; only the shutdown (or a closed listener) ends the loop.
		return acceptloop.Run(co, l, acceptloop.Config{
			Stop: stop.Done,
			Logf: func(format string, args ...any) { log.Printf("resp: "+format, args...) },
			Handle: func(co *blitzio.Co, a blitzio.Accepted) bool {
				blitzio.Spawn(co, serve(rt, db, a.Conn))
				return true
			},
		})
	}))
	<-stop.Context().Done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stop.OnShutdown(rt.Shutdown) // closes the connections still open
	if err := stop.Wait(ctx); err != nil {
		return err
	}
	fmt.Println("resp: stopped")
	return nil
}

// errProtocol is a malformed request: the server answers with an error and closes, as
// Redis does.
var errProtocol = errors.New("protocol error")

// client is one connection's reading and writing state. The futures it awaits are
// fields, reused from one read to the next: reading a command allocates only what the
// command holds.
type client struct {
	in     *stream.BufReader
	out    *stream.BufWriter
	line   []byte // ReadUntil's buffer, reused from line to line
	waitLn flushWhileWaiting[[]byte]
	waitN  flushWhileWaiting[int]
	fill   appendBuffered
}

// serve answers one connection's commands until it closes.
func serve(rt *blitzio.Runtime, db *store, conn *blitzio.TCPStream) blitzio.Future[struct{}] {
	return blitzio.Async(func(co *blitzio.Co) struct{} {
		defer conn.Close()
		c := &client{in: stream.NewBufReader(conn, 0), out: stream.NewBufWriter(conn, 0)}
		c.in.SetMaxLine(maxInline)
		c.waitLn.out, c.waitN.out, c.fill.in = c.out, c.out, c.in
		for {
			args, err := c.readCommand(co)
			if err != nil {
				// The replies to the commands before are sent in any case; a malformed
				// request gets an error. A client that went away, or ended the stream in
				// the middle of a command, gets nothing more: that command is not run.
				if errors.Is(err, errProtocol) {
					blitzio.Await(co, c.out.Write([]byte("-ERR "+err.Error()+"\r\n")))
				}
				blitzio.Await(co, c.out.Flush())
				return struct{}{}
			}
			reply := execute(co, rt, db, args)
			if r := blitzio.Await(co, c.out.Write([]byte(reply))); r.Err != nil {
				return struct{}{}
			}
			// Pipelining: the replies to everything received go out in one write, now if
			// nothing more is buffered; otherwise the next read sends them if it has to
			// wait for the rest of a command (flushWhileWaiting).
			if c.in.Buffered() == 0 {
				if r := blitzio.Await(co, c.out.Flush()); r.Err != nil {
					return struct{}{}
				}
			}
		}
	})
}

// flushWhileWaiting is a read that, while it waits for the client, writes the replies
// buffered so far: no reply waits for a command that is still arriving (Redis answers
// "PING\r\nPI" with +PONG at once, and a client may wait for it before it sends the
// rest).
type flushWhileWaiting[T any] struct {
	read blitzio.Future[blitzio.Result[T]]
	out  *stream.BufWriter
}

// Poll implements blitzio.Future.
func (f *flushWhileWaiting[T]) Poll(cx *blitzio.Context) (blitzio.Result[T], bool) {
	if r, ok := f.read.Poll(cx); ok {
		return r, true
	}
	if f.out.Buffered() > 0 {
		if r, ok := f.out.PollFlush(cx); ok && r.Err != nil {
			return blitzio.Result[T]{Err: r.Err}, true
		}
	}
	return blitzio.Result[T]{}, false
}

// readLine reads one line and returns it without its "\n" or "\r\n". A line the stream
// ends in before its "\n" is not a line: it is io.EOF (a command cut short by a client
// that went away must not run). The slice is valid until the next read.
func (c *client) readLine(co *blitzio.Co) ([]byte, error) {
	if cap(c.line) > 4<<10 {
		c.line = nil // do not keep a long line's buffer for the life of the connection
	}
	c.waitLn.read = c.in.ReadUntil('\n', c.line[:0])
	r := blitzio.Await(co, &c.waitLn)
	if r.Err != nil {
		if r.Err == stream.ErrTooLong {
			return nil, errProtocol
		}
		return nil, r.Err
	}
	c.line = r.Value
	l := r.Value[:len(r.Value)-1]
	if len(l) > 0 && l[len(l)-1] == '\r' {
		l = l[:len(l)-1]
	}
	return l, nil
}

// readCommand reads one request: a RESP array of bulk strings (what redis-cli sends) or
// an inline command (a line of words, quoted as Redis allows, what telnet sends).
func (c *client) readCommand(co *blitzio.Co) ([]string, error) {
	for {
		l, err := c.readLine(co)
		if err != nil {
			return nil, err
		}
		if len(l) == 0 || l[0] != '*' {
			args, err := splitInline(l)
			if err != nil {
				return nil, err
			}
			if len(args) > 0 {
				return args, nil
			}
			continue // an empty line: nothing to do (a loop, not recursion: a flood of them costs no stack)
		}
		n, ok := parseInt(string(l[1:]))
		if !ok || n > maxArgs {
			return nil, errProtocol
		}
		if n <= 0 {
			continue // Redis ignores an empty or null array
		}
		args := make([]string, 0, min(n, 1024))
		total := 0
		for range n {
			arg, err := c.readBulk(co, maxRequest-total)
			if err != nil {
				return nil, err
			}
			args = append(args, arg)
			total += len(arg)
		}
		return args, nil
	}
}

// readBulk reads one bulk string, "$<length>\r\n<bytes>\r\n", of at most limit bytes.
func (c *client) readBulk(co *blitzio.Co, limit int) (string, error) {
	h, err := c.readLine(co)
	if err != nil {
		return "", noEOF(err)
	}
	if len(h) == 0 || h[0] != '$' {
		return "", errProtocol
	}
	size, ok := parseInt(string(h[1:]))
	if !ok || size < 0 || size > maxBulk || size > int64(limit) {
		return "", errProtocol
	}
	// The argument grows with the bytes that arrive: the length announced is a promise
	// of the client, not memory to reserve for it. Its CRLF is read with it.
	var b strings.Builder
	b.Grow(int(min(size+2, bulkPrealloc)))
	c.fill.dst = &b
	c.waitN.read = &c.fill
	for left := int(size) + 2; left > 0; {
		c.fill.max = left
		r := blitzio.Await(co, &c.waitN)
		if r.Err != nil {
			return "", noEOF(r.Err)
		}
		left -= r.Value
	}
	c.fill.dst = nil
	s := b.String()
	if !strings.HasSuffix(s, "\r\n") {
		return "", errProtocol
	}
	return s[:size], nil
}

// noEOF turns the end of the stream inside a command into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendBuffered appends to dst up to max of the bytes buffered in in (reading first if
// none are), and returns how many it appended.
type appendBuffered struct {
	in  *stream.BufReader
	dst *strings.Builder
	max int
}

// Poll implements blitzio.Future.
func (f *appendBuffered) Poll(cx *blitzio.Context) (blitzio.Result[int], bool) {
	r, ok := f.in.PollFill(cx)
	if !ok {
		return blitzio.Result[int]{}, false
	}
	if r.Err != nil {
		return blitzio.Result[int]{Err: r.Err}, true
	}
	n := min(len(r.Value), f.max)
	f.dst.Write(r.Value[:n])
	f.in.Consume(n)
	return blitzio.Result[int]{Value: n}, true
}

// splitInline splits an inline command into its arguments as Redis does
// (sdssplitargs): words separated by spaces, "double quotes" with \n, \r, \t, \b, \a,
// \xHH and \<char> escapes, and 'single quotes' with \'. A quote must be closed and
// followed by a space or the end of the line.
func splitInline(l []byte) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(l) && isSpace(l[i]) {
			i++
		}
		if i == len(l) {
			return args, nil
		}
		var cur []byte
		switch l[i] {
		case '"':
			for i++; ; {
				if i >= len(l) {
					return nil, errProtocol // unbalanced quotes
				}
				ch := l[i]
				if ch == '\\' && i+3 < len(l) && l[i+1] == 'x' && isHex(l[i+2]) && isHex(l[i+3]) {
					cur = append(cur, hexVal(l[i+2])<<4|hexVal(l[i+3]))
					i += 4
					continue
				}
				if ch == '\\' && i+1 < len(l) {
					cur = append(cur, unescape(l[i+1]))
					i += 2
					continue
				}
				if ch == '"' {
					if i+1 < len(l) && !isSpace(l[i+1]) {
						return nil, errProtocol // a closing quote must end the word
					}
					i++
					break
				}
				cur = append(cur, ch)
				i++
			}
		case '\'':
			for i++; ; {
				if i >= len(l) {
					return nil, errProtocol
				}
				ch := l[i]
				if ch == '\\' && i+1 < len(l) && l[i+1] == '\'' {
					cur = append(cur, '\'')
					i += 2
					continue
				}
				if ch == '\'' {
					if i+1 < len(l) && !isSpace(l[i+1]) {
						return nil, errProtocol
					}
					i++
					break
				}
				cur = append(cur, ch)
				i++
			}
		default:
			for i < len(l) && !isSpace(l[i]) {
				cur = append(cur, l[i])
				i++
			}
		}
		args = append(args, string(cur))
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

// parseInt parses a decimal int64 as Redis does (string2ll): no sign but a leading '-',
// no leading zeros, no spaces, nothing out of range; "-0" is not a number.
func parseInt(s string) (int64, bool) {
	if s == "0" {
		return 0, true
	}
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + uint64(s[i]-'0')
	}
	switch {
	case neg && v <= 1<<63:
		return int64(-v), true // -(1<<63) wraps to math.MinInt64, as wanted
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	}
	return 0, false
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

func integer(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }

// errReply is an error reply. A line break in it (it may quote the client's bytes)
// becomes a space, as in Redis: it would end the reply early, and the rest would be
// read as replies the server never sent.
func errReply(msg string) string {
	return "-" + strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, msg) + "\r\n"
}

const (
	nullBulk   = "$-1\r\n"
	errNotInt  = "-ERR value is not an integer or out of range\r\n"
	errSyntax  = "-ERR syntax error\r\n"
	errOverflw = "-ERR increment or decrement would overflow\r\n"
)

// expireAt is the deadline n units (1000 for seconds, 1 for milliseconds) after now,
// in milliseconds on the store's clock; false when it overflows (Redis: "invalid expire
// time").
func expireAt(n, unit, now int64) (int64, bool) {
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return 0, false
	}
	n *= unit
	if n > math.MaxInt64-now {
		return 0, false
	}
	return n + now, true
}

// execute runs one command and returns its RESP reply.
func execute(co *blitzio.Co, rt *blitzio.Runtime, db *store, args []string) string {
	cmd := strings.ToUpper(args[0])
	wrongArgs := "-ERR wrong number of arguments for '" + strings.ToLower(cmd) + "' command\r\n"
	db.mu.Lock()
	defer db.mu.Unlock()
	now := db.now(rt)
	switch cmd {
	case "PING":
		switch len(args) {
		case 1:
			return "+PONG\r\n"
		case 2:
			return bulk(args[1])
		}
		return wrongArgs
	case "ECHO":
		if len(args) != 2 {
			return wrongArgs
		}
		return bulk(args[1])
	case "SET":
		if len(args) < 3 {
			return wrongArgs
		}
		return set(co, rt, db, args, now)
	case "GET":
		if len(args) != 2 {
			return wrongArgs
		}
		if e, ok := db.lookup(args[1], now); ok {
			return bulk(e.val)
		}
		return nullBulk
	case "DEL":
		if len(args) < 2 {
			return wrongArgs
		}
		n := int64(0)
		for _, k := range args[1:] {
			if e, ok := db.lookup(k, now); ok {
				db.remove(k, e)
				n++
			}
		}
		return integer(n)
	case "INCR":
		if len(args) != 2 {
			return wrongArgs
		}
		e, ok := db.lookup(args[1], now)
		v := int64(0)
		if ok {
			if v, ok = parseInt(e.val); !ok { // "", "007", "+5", " 5" are not integers
				return errNotInt
			}
		}
		if v == math.MaxInt64 {
			return errOverflw
		}
		v++
		e.val = strconv.FormatInt(v, 10)
		db.data[args[1]] = e // the expiry and its timer stay, as in Redis
		return integer(v)
	case "EXPIRE":
		if len(args) < 3 {
			return wrongArgs
		}
		return expire(co, rt, db, args, now)
	case "TTL":
		if len(args) != 2 {
			return wrongArgs
		}
		e, ok := db.lookup(args[1], now)
		switch {
		case !ok:
			return ":-2\r\n"
		case e.expireAt == 0:
			return ":-1\r\n"
		}
		return integer((max(e.expireAt-now, 0) + 500) / 1000) // rounded, as Redis does
	case "COMMAND": // redis-cli asks for the command table at start; an empty one will do
		return "*0\r\n"
	}
	name := args[0]
	if len(name) > 128 {
		name = name[:128]
	}
	return errReply("ERR unknown command '" + name + "'")
}

// set runs SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|KEEPTTL].
func set(co *blitzio.Co, rt *blitzio.Runtime, db *store, args []string, now int64) string {
	var nx, xx, get, keep bool
	unit, when := int64(0), ""
	for i := 3; i < len(args); i++ {
		switch opt := strings.ToUpper(args[i]); {
		case opt == "NX" && !xx:
			nx = true
		case opt == "XX" && !nx:
			xx = true
		case opt == "GET":
			get = true
		case opt == "KEEPTTL" && unit == 0:
			keep = true
		case (opt == "EX" || opt == "PX") && !keep && unit == 0 && i+1 < len(args):
			unit, when = 1, args[i+1]
			if opt == "EX" {
				unit = 1000
			}
			i++
		default:
			return errSyntax
		}
	}
	at := int64(0)
	if unit != 0 {
		n, ok := parseInt(when)
		if !ok {
			return errNotInt
		}
		if at, ok = expireAt(n, unit, now); !ok || n <= 0 {
			return "-ERR invalid expire time in 'set' command\r\n"
		}
	}
	key := args[1]
	old, exists := db.lookup(key, now)
	reply := "+OK\r\n"
	if get {
		reply = nullBulk
		if exists {
			reply = bulk(old.val)
		}
	}
	if nx && exists || xx && !exists {
		if get {
			return reply
		}
		return nullBulk
	}
	if keep && exists {
		old.val = args[2]
		db.data[key] = old
		return reply
	}
	db.put(co, rt, key, entry{val: args[2], stop: old.stop}, at)
	return reply
}

// expire runs EXPIRE key seconds [NX|XX|GT|LT] as Redis 7 does: a time in the past (0,
// negative) deletes the key; one that overflows is an error.
func expire(co *blitzio.Co, rt *blitzio.Runtime, db *store, args []string, now int64) string {
	var nx, xx, gt, lt bool
	for _, a := range args[3:] {
		switch strings.ToUpper(a) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GT":
			gt = true
		case "LT":
			lt = true
		default:
			return errReply("ERR Unsupported option " + a)
		}
	}
	if nx && (xx || gt || lt) {
		return "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
	}
	if gt && lt {
		return "-ERR GT and LT options at the same time are not compatible\r\n"
	}
	n, ok := parseInt(args[2])
	if !ok {
		return errNotInt
	}
	at, ok := expireAt(n, 1000, now)
	if !ok {
		return "-ERR invalid expire time in 'expire' command\r\n"
	}
	key := args[1]
	e, ok := db.lookup(key, now)
	if !ok {
		return ":0\r\n"
	}
	cur := e.expireAt // 0: no expiry, an infinite one for GT and LT
	if nx && cur != 0 || xx && cur == 0 || gt && (cur == 0 || at <= cur) || lt && cur != 0 && at >= cur {
		return ":0\r\n"
	}
	if at <= now {
		db.remove(key, e)
		return ":1\r\n"
	}
	db.put(co, rt, key, e, at)
	return ":1\r\n"
}
