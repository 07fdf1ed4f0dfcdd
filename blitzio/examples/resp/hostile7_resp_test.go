//go:build linux || darwin || freebsd

package main

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A flood of blank lines crashed the whole server: readCommand skipped each one by
// calling itself, so 4 million of them (8 MB from one client) grew the connection's
// stack past Go's 1 GB limit and the process died with "fatal error: stack overflow".
func TestHostile7RESPBlankLinesDoNotExhaustStack(t *testing.T) {
	prog := startRESP(t, "")
	rc := dialRESP(t, prog.Addr)
	chunk := strings.Repeat("\r\n", 100_000)
	for range 50 { // 5 million blank lines, 10 MB
		rc.raw(chunk)
	}
	rc.raw("PING\r\n")
	if got, err := rc.tryReply(); err != nil || got != "+PONG\r\n" {
		t.Fatalf("PING after 5M blank lines: %q, %v (the server died or stopped answering)", got, err)
	}
	// And the server still serves others.
	if got := dialRESP(t, prog.Addr).do("PING"); got != "+PONG\r\n" {
		t.Fatalf("a second client: %q", got)
	}
}

// An unknown command's name was copied raw into the error reply. A bulk string may hold
// "\r\n", so a client (or whoever controls a command name, as in a proxy) could end the
// error early and forge replies: "NO\r\n+OK" answered "-ERR unknown command 'NO\r\n"
// then "+OK'\r\n", and every later reply on the connection was off by one. Redis turns
// line breaks in an error into spaces.
func TestHostile7RESPErrorRepliesCannotBeForged(t *testing.T) {
	prog := startRESP(t, "")
	rc := dialRESP(t, prog.Addr)
	rc.send("NO\r\n+OK")
	rc.send("PING")
	if got := rc.reply(); !strings.HasPrefix(got, "-ERR unknown command") {
		t.Fatalf("first reply %q, want an unknown-command error", got)
	}
	if got := rc.reply(); got != "+PONG\r\n" {
		t.Fatalf("second reply %q, want +PONG: the command name split the error reply in two", got)
	}
	rc.send("EXPIRE", "k", "1", "X\r\n:1")
	rc.send("PING")
	if got := rc.reply(); !strings.HasPrefix(got, "-ERR") {
		t.Fatalf("EXPIRE with a bad option: %q, want an error", got)
	}
	if got := rc.reply(); got != "+PONG\r\n" {
		t.Fatalf("after EXPIRE's error: %q, want +PONG", got)
	}
}

// INCR must reject what Redis rejects: values that are not canonical integers (the old
// code took "", "007", "+5" and "-0" as numbers) and an increment past math.MaxInt64
// (the old code wrapped around to math.MinInt64).
func TestHostile7RESPIncrLikeRedis(t *testing.T) {
	prog := startRESP(t, "")
	rc := dialRESP(t, prog.Addr)
	const notInt = "-ERR value is not an integer or out of range\r\n"
	for _, v := range []string{"", "007", "+5", "-0", " 5", "5 ", "1.5", "12345678901234567890", "0x10"} {
		rc.do("SET", "n", v)
		if got := rc.do("INCR", "n"); got != notInt {
			t.Errorf("INCR of %q: %q, want %q", v, got, notInt)
		}
	}
	rc.do("SET", "n", "9223372036854775806")
	if got := rc.do("INCR", "n"); got != ":9223372036854775807\r\n" {
		t.Fatalf("INCR to MaxInt64: %q", got)
	}
	if got := rc.do("INCR", "n"); got != "-ERR increment or decrement would overflow\r\n" {
		t.Fatalf("INCR past MaxInt64: %q, want the overflow error", got)
	}
	if got := rc.do("GET", "n"); got != "$19\r\n9223372036854775807\r\n" {
		t.Fatalf("after the refused INCR the value is %q, want it unchanged", got)
	}
	rc.do("SET", "n", "-9223372036854775808")
	if got := rc.do("INCR", "n"); got != ":-9223372036854775807\r\n" {
		t.Fatalf("INCR of MinInt64: %q", got)
	}
	if got := rc.do("INCR", "fresh"); got != ":1\r\n" {
		t.Fatalf("INCR of a missing key: %q", got)
	}
}

// EXPIRE's seconds were multiplied into a time.Duration without an overflow check:
// EXPIRE k -9223372037 wrapped around to about +292 years instead of deleting the key,
// and anything above 2^31 was refused although Redis takes it. The replies here are
// Redis 7's.
func TestHostile7RESPExpireLikeRedis(t *testing.T) {
	prog := startRESP(t, "")
	rc := dialRESP(t, prog.Addr)
	for _, tc := range []struct {
		secs      string
		want, ttl string
	}{
		{"0", ":1\r\n", ":-2\r\n"},   // a time in the past deletes the key
		{"-10", ":1\r\n", ":-2\r\n"}, // so does a negative one
		{"-9223372037", ":1\r\n", ":-2\r\n"},
		{"-9223372036854775808", "-ERR invalid expire time in 'expire' command\r\n", ":-1\r\n"},
		{"9223372036854775807", "-ERR invalid expire time in 'expire' command\r\n", ":-1\r\n"},
		{"9223372036854775", "-ERR invalid expire time in 'expire' command\r\n", ":-1\r\n"}, // *1000 fits, +now does not
		{"2147483649", ":1\r\n", "~2147483649"},
		{"10000000000", ":1\r\n", "~10000000000"},
		{"100", ":1\r\n", "~100"},
		{"abc", "-ERR value is not an integer or out of range\r\n", ":-1\r\n"},
		{"+5", "-ERR value is not an integer or out of range\r\n", ":-1\r\n"},
	} {
		rc.do("SET", "k", "v")
		if got := rc.do("EXPIRE", "k", tc.secs); got != tc.want {
			t.Errorf("EXPIRE k %s: %q, want %q", tc.secs, got, tc.want)
		}
		if got := rc.do("TTL", "k"); !match(got, tc.ttl) {
			t.Errorf("TTL after EXPIRE k %s: %q, want %q", tc.secs, got, tc.ttl)
		}
	}
	// SET clears an expiry (and its timer may not delete the new value); INCR keeps it.
	rc.do("SET", "k", "1")
	rc.do("EXPIRE", "k", "100")
	if got := rc.do("INCR", "k"); got != ":2\r\n" {
		t.Fatalf("INCR: %q", got)
	}
	if got := rc.do("TTL", "k"); !match(got, "~100") {
		t.Fatalf("TTL after INCR: %q, want :100 (INCR keeps the expiry)", got)
	}
	rc.do("SET", "k", "v")
	if got := rc.do("TTL", "k"); got != ":-1\r\n" {
		t.Fatalf("TTL after SET over an expiring key: %q, want :-1", got)
	}
	if got := rc.do("EXPIRE", "missing", "10"); got != ":0\r\n" {
		t.Fatalf("EXPIRE of a missing key: %q", got)
	}
	if got := rc.do("TTL", "missing"); got != ":-2\r\n" {
		t.Fatalf("TTL of a missing key: %q", got)
	}
	// Redis 7's options.
	rc.do("SET", "o", "v")
	for _, tc := range []struct{ args, want string }{
		{"10 XX", ":0\r\n"}, {"10 GT", ":0\r\n"}, {"10 LT", ":1\r\n"}, {"20 NX", ":0\r\n"},
		{"5 GT", ":0\r\n"}, {"50 GT", ":1\r\n"}, {"60 LT", ":0\r\n"}, {"30 lt", ":1\r\n"},
		{"30 NX XX", "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"},
		{"30 GT LT", "-ERR GT and LT options at the same time are not compatible\r\n"},
		{"30 FOO", "-ERR Unsupported option FOO\r\n"},
	} {
		if got := rc.do(append([]string{"EXPIRE", "o"}, strings.Fields(tc.args)...)...); got != tc.want {
			t.Errorf("EXPIRE o %s: %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := rc.do("TTL", "o"); !match(got, "~30") {
		t.Fatalf("TTL after the options: %q, want :30", got)
	}
}

// SET's options, which redis-cli users type every day (SET k v EX 10), were refused
// with "wrong number of arguments".
func TestHostile7RESPSetOptions(t *testing.T) {
	prog := startRESP(t, "")
	rc := dialRESP(t, prog.Addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "k", "v", "EX", "100"}, "+OK\r\n"},
		{[]string{"TTL", "k"}, "~100"},
		{[]string{"SET", "k", "v2", "KEEPTTL"}, "+OK\r\n"},
		{[]string{"TTL", "k"}, "~100"},
		{[]string{"SET", "k", "v3", "px", "50000"}, "+OK\r\n"},
		{[]string{"TTL", "k"}, "~50"},
		{[]string{"SET", "k", "v4", "NX"}, "$-1\r\n"},
		{[]string{"SET", "k", "v5", "XX", "GET"}, "$2\r\nv3\r\n"},
		{[]string{"TTL", "k"}, ":-1\r\n"},
		{[]string{"SET", "nokey", "v", "XX"}, "$-1\r\n"},
		{[]string{"SET", "nokey", "v", "NX", "GET"}, "$-1\r\n"},
		{[]string{"GET", "nokey"}, "$1\r\nv\r\n"},
		{[]string{"SET", "k", "v", "EX", "0"}, "-ERR invalid expire time in 'set' command\r\n"},
		{[]string{"SET", "k", "v", "EX", "9223372036854775807"}, "-ERR invalid expire time in 'set' command\r\n"},
		{[]string{"SET", "k", "v", "PX", "9223372036854775707"}, "-ERR invalid expire time in 'set' command\r\n"},
		{[]string{"SET", "k", "v", "EX", "abc"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"SET", "k", "v", "EX"}, "-ERR syntax error\r\n"},
		{[]string{"SET", "k", "v", "EX", "10", "PX", "100"}, "-ERR syntax error\r\n"},
		{[]string{"SET", "k", "v", "KEEPTTL", "EX", "10"}, "-ERR syntax error\r\n"},
		{[]string{"SET", "k", "v", "NX", "XX"}, "-ERR syntax error\r\n"},
		{[]string{"SET", "k", "v", "FOO"}, "-ERR syntax error\r\n"},
		{[]string{"GET", "k"}, "$2\r\nv5\r\n"},
		{[]string{"PING", "a", "b"}, "-ERR wrong number of arguments for 'ping' command\r\n"},
	} {
		if got := rc.do(tc.args...); !match(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// A command the client did not finish (it closed the connection, or half-closed it, in
// the middle) must not run. The old reader took the last line without its "\n" as a
// whole inline command: "SET trunc v" cut short by a dying client was executed.
func TestHostile7RESPTruncatedCommandIsNotRun(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			prog := startRESP(t, b.env)
			for _, partial := range []string{
				"SET trunc v",
				"PING\r\nSET trunc v",
				"*3\r\n$3\r\nSET\r\n$5\r\ntrunc\r\n$1\r\nv",
				"*3\r\n$3\r\nSET\r\n$5\r\ntrunc\r\n$1\r\nv\r",
			} {
				rc := dialRESP(t, prog.Addr)
				rc.raw(partial)
				if err := rc.c.CloseWrite(); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(partial, "PING") {
					if got := rc.reply(); got != "+PONG\r\n" {
						t.Fatalf("%q: the complete command got %q, want +PONG", partial, got)
					}
				}
				rc.expectClosed()
				if got := dialRESP(t, prog.Addr).do("GET", "trunc"); got != "$-1\r\n" {
					t.Fatalf("after %q and a half-close, GET trunc = %q: the unfinished command ran", partial, got)
				}
			}
		})
	}
}

// A reply must not wait for the next command to arrive whole. The old server flushed
// only when nothing at all was buffered, so "PING\r\nPI" (the second command still on
// its way) left +PONG in the buffer until "NG\r\n" came: a client that waits for a
// reply before it sends the rest waited forever. Redis answers at once.
func TestHostile7RESPReplyNotHeldForPartialCommand(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			prog := startRESP(t, b.env)
			rc := dialRESP(t, prog.Addr)
			rc.raw("PING\r\nPI")
			if got, err := rc.tryReply(); err != nil || got != "+PONG\r\n" {
				t.Fatalf("PING followed by half a command: %q, %v; want +PONG without waiting for the rest", got, err)
			}
			// The same inside RESP: two whole commands and half of a third.
			rc.raw("NG\r\n" + command("SET", "k", "v") + "*2\r\n$3\r\nGET\r\n$1\r\n")
			for _, want := range []string{"+PONG\r\n", "+OK\r\n"} {
				if got, err := rc.tryReply(); err != nil || got != want {
					t.Fatalf("%q, %v; want %q without waiting for the GET still arriving", got, err, want)
				}
			}
			rc.raw("k\r\n")
			if got := rc.reply(); got != "$1\r\nv\r\n" {
				t.Fatalf("GET: %q", got)
			}
		})
	}
}

// Every split of a pipeline into writes (here one byte per write) gives the same
// replies, in order.
func TestHostile7RESPSplitAtEveryByte(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			prog := startRESP(t, b.env)
			rc := dialRESP(t, prog.Addr)
			rc.c.SetNoDelay(true)
			reqs := command("SET", "k", "a b\r\nc") + "GET k\r\n" + command("INCR", "n") + "  INCR   n \r\n" +
				"*0\r\n" + command("ECHO", "") + "\r\n" + `SET q "x\"y"` + "\r\n" + command("GET", "q") + command("DEL", "k", "q", "n")
			want := []string{"+OK\r\n", "$6\r\na b\r\nc\r\n", ":1\r\n", ":2\r\n", "$0\r\n\r\n", "+OK\r\n", "$3\r\nx\"y\r\n", ":3\r\n"}
			n := len(reqs)
			if testing.Short() {
				n = min(n, 60)
				want = want[:2]
			}
			for i := range n {
				rc.raw(reqs[i : i+1])
			}
			if n < len(reqs) {
				rc.raw(reqs[n:])
			}
			for _, w := range want {
				if got := rc.reply(); got != w {
					t.Fatalf("byte by byte: %q, want %q", got, w)
				}
			}
		})
	}
}

// Arrays Redis ignores (*0, *-1) are ignored; malformed headers are protocol errors that
// close the connection; and a command may have more than 1024 arguments (DEL of 2000
// keys), which the old reader refused as a protocol error.
func TestHostile7RESPArrayHeaders(t *testing.T) {
	prog := startRESP(t, "")
	rc := dialRESP(t, prog.Addr)
	rc.raw("*0\r\n*-1\r\n*-5\r\nPING\r\n")
	if got := rc.reply(); got != "+PONG\r\n" {
		t.Fatalf("empty and null arrays then PING: %q, want +PONG", got)
	}
	keys := make([]string, 2000)
	for i := range keys {
		keys[i] = "key" + strconv.Itoa(i)
	}
	rc.do("SET", "key7", "x")
	rc.do("SET", "key1999", "x")
	if got := rc.do(append([]string{"DEL"}, keys...)...); got != ":2\r\n" {
		t.Fatalf("DEL of 2000 keys: %q, want :2", got)
	}
	for _, bad := range []string{
		"*1\r\n$-1\r\n",
		"*1\r\n$999999999999\r\n",
		"*1\r\n$9223372036854775807\r\n",
		"*1\r\n$9223372036854775808\r\n",
		"*1\r\n$+4\r\nPING\r\n",
		"*+1\r\n$4\r\nPING\r\n",
		"*9223372036854775807\r\n",
		"*1\r\n:4\r\nPING\r\n",
		"*1\r\n$4\r\nPINGX\r\n", // the length does not match the bytes
		"*2\r\n$x\r\n",
		`SET k "unbalanced` + "\r\n",
		"GET " + strings.Repeat("k", 70_000) + "\r\n", // an inline line past 64 KiB
	} {
		rc := dialRESP(t, prog.Addr)
		rc.raw(bad)
		if got := rc.reply(); got != "-ERR protocol error\r\n" {
			t.Fatalf("%q: %q, want -ERR protocol error", trunc(bad), got)
		}
		rc.expectClosed()
	}
}

// Inline commands split words as Redis does, quotes and escapes included.
func TestHostile7RESPInlineQuoting(t *testing.T) {
	prog := startRESP(t, "")
	rc := dialRESP(t, prog.Addr)
	for _, tc := range []struct{ line, want string }{
		{`SET k "hello world"`, "+OK\r\n"},
		{"GET k", "$11\r\nhello world\r\n"},
		{`SET k "a\r\nb\x41\x4a\xzz"`, "+OK\r\n"},
		{"GET k", "$9\r\na\r\nbAJxzz\r\n"},
		{`SET k 'it\'s'`, "+OK\r\n"},
		{"GET k", "$4\r\nit's\r\n"},
		{`ECHO ""`, "$0\r\n\r\n"},
		{"\t ping \t", "+PONG\r\n"},
	} {
		rc.raw(tc.line + "\r\n")
		if got := rc.reply(); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.line, got, tc.want)
		}
	}
}

// Many clients incrementing one key lose no update: each command runs atomically.
func TestHostile7RESPConcurrentIncr(t *testing.T) {
	prog := startRESP(t, "")
	clients, per := 8, 250
	if testing.Short() {
		per = 50
	}
	var wg sync.WaitGroup
	errs := make(chan string, clients)
	for range clients {
		rc := dialRESP(t, prog.Addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			for range per {
				b.WriteString(command("INCR", "shared"))
			}
			rc.c.SetWriteDeadline(time.Now().Add(replyTimeout))
			if _, err := rc.c.Write([]byte(b.String())); err != nil {
				errs <- err.Error()
				return
			}
			for range per {
				if got, err := rc.tryReply(); err != nil || got[0] != ':' {
					errs <- "INCR: " + got + " " + errString(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	want := strconv.Itoa(clients * per)
	if got := dialRESP(t, prog.Addr).do("GET", "shared"); got != "$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n" {
		t.Fatalf("after %d INCRs from %d clients: %q", clients*per, clients, got)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// match compares a reply with what a test wants: want itself, or for "~N" a TTL of N
// seconds or up to 5 less. Time passes between the command that set it and TTL (which
// rounds): on a loaded machine a client or the server may stall for over a second, so
// one second less is not enough. Every TTL the tests check differs from the wrong
// values (-1, another expiry set before, another unit) by more than that.
func match(got, want string) bool {
	n, err := strconv.ParseInt(strings.TrimPrefix(want, "~"), 10, 64)
	if !strings.HasPrefix(want, "~") || err != nil {
		return got == want
	}
	for k := n; k >= max(n-5, 0); k-- {
		if got == ":"+strconv.FormatInt(k, 10)+"\r\n" {
			return true
		}
	}
	return false
}
