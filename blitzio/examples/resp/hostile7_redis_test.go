//go:build linux || darwin || freebsd

package main

import (
	"bufio"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startRedis starts a real redis-server on a free loopback port, or skips the test.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (apt-get install redis-server): no comparison")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--protected-mode", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Skipf("redis-server does not start: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not listen within 20s")
		}
	}
}

// exchange sends req on a new connection, then an ECHO end marker, and returns the
// replies up to the marker (or up to the server's closing the connection).
func exchange(t *testing.T, addr, req string) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(replyTimeout))
	const end = "$9\r\nend-7f3a1\r\n"
	if _, err := c.Write([]byte(req + command("ECHO", "end-7f3a1"))); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var replies []string
	for {
		s, err := readReply(r)
		if err != nil {
			if strings.Contains(err.Error(), "closed the connection") {
				return append(replies, "<closed>")
			}
			t.Fatalf("%q: reading a reply: %v", trunc(req), err)
		}
		if s == end {
			return replies
		}
		replies = append(replies, normalize(s))
	}
}

var (
	protoErr      = regexp.MustCompile(`^-ERR Protocol error: .*\r\n$`)
	unknownSuffix = regexp.MustCompile(`, with args beginning with: .*\r\n$`)
)

// normalize hides the differences the example keeps on purpose: one message for every
// protocol error, and no list of arguments after "unknown command".
func normalize(s string) string {
	if protoErr.MatchString(s) {
		return "-ERR protocol error\r\n"
	}
	return unknownSuffix.ReplaceAllString(s, "\r\n")
}

// The example's replies are Redis 7's, byte for byte, for the same requests: malformed
// RESP, inline commands with quotes, pipelines, arity, options, integer and expiry edge
// cases. Each request goes to a fresh connection of each server; keys are flushed in
// between by deleting the few used.
func TestHostile7RESPMatchesRedisServer(t *testing.T) {
	redis := startRedis(t)
	prog := startRESP(t, "")
	cleanup := command("DEL", "k", "n", "e", "nokey", "a", "b", "o")
	cases := []string{
		"*0\r\nPING\r\n",
		"*-5\r\nPING\r\n",
		"*1\r\n$-1\r\nPING\r\n",
		"*1\r\n$999999999999\r\n",
		"*1\r\n$9223372036854775808\r\n",
		"*9223372036854775807\r\n",
		"*1\r\n:4\r\nPING\r\n",
		"*1\r\n$+4\r\nPING\r\n",
		"*+1\r\n$4\r\nPING\r\n",
		"?junk\r\n",
		"\r\n\r\nping\r\nPiNg hello\r\n",
		"PING a b\r\n" + command("PING", "a", "b"),
		command("ECHO", "") + command("ECHO") + command("ECHO", "a", "b"),
		command("NOPE") + command("NO\r\n+OK", "x"),
		"SET k v\r\nGET k\r\nDEL k k nokey\r\nGET k\r\n",
		"SET k \"hello world\"\r\nGET k\r\n",
		"SET k \"a\\r\\nb\\x41\\xzz\" \r\nGET k\r\n",
		"SET k 'it\\'s'\r\nGET k\r\n",
		"SET k 'it''s'\r\n",
		"SET k \"unbalanced\r\n",
		"SET k \"x\"y\r\n",
		"   \r\n\t\r\nPING \"\"\r\n",
		"SET e \"\"\r\nINCR e\r\nSET e 007\r\nINCR e\r\nSET e +5\r\nINCR e\r\nSET e -0\r\nINCR e\r\n",
		"SET e 9223372036854775807\r\nINCR e\r\nGET e\r\n",
		"SET e -9223372036854775808\r\nINCR e\r\nSET e 12345678901234567890\r\nINCR e\r\nINCR n\r\nINCR n\r\n",
		command("SET", "e", "") + command("INCR", "e"),
		"SET e 5\r\nEXPIRE e 0\r\nTTL e\r\nGET e\r\n",
		"SET e 5\r\nEXPIRE e -10\r\nTTL e\r\n",
		"SET e 5\r\nEXPIRE e -9223372037\r\nTTL e\r\n",
		"SET e 5\r\nEXPIRE e -9223372036854775808\r\nTTL e\r\n",
		"SET e 5\r\nEXPIRE e 9223372036854775807\r\nTTL e\r\n",
		"SET e 5\r\nEXPIRE e abc\r\nEXPIRE e 1.5\r\nEXPIRE e +5\r\nEXPIRE e 05\r\nTTL e\r\n",
		"EXPIRE nokey 10\r\nTTL nokey\r\nTTL e\r\n",
		"SET o v\r\nEXPIRE o 10 XX\r\nEXPIRE o 10 GT\r\nEXPIRE o 30 NX XX\r\nEXPIRE o 30 GT LT\r\nEXPIRE o 30 FOO\r\nEXPIRE o abc FOO\r\n",
		"SET k v NX\r\nSET k v2 NX\r\nGET k\r\nSET k v3 XX GET\r\nSET nokey v XX\r\nSET nokey v XX GET\r\nSET k v4 NX GET\r\n",
		"SET k v EX 0\r\nSET k v EX -1\r\nSET k v EX abc\r\nSET k v EX\r\nSET k v EX 10 PX 100\r\nSET k v KEEPTTL EX 10\r\nSET k v NX XX\r\nSET k v FOO\r\n",
		"SET k v EX 9223372036854775807\r\nSET k v PX 9223372036854775807\r\nSET k v PX 9223372036854775707\r\nTTL k\r\n",
		"SET e 5\r\nEXPIRE e 9223372036854775\r\nEXPIRE e 9223372036854\r\nGET e\r\n",
		"SET k v EX 100\r\nSET k v2\r\nTTL k\r\n",
		"SET k\r\nGET\r\nINCR\r\nDEL\r\nTTL\r\nEXPIRE k\r\nECHO\r\nGET a b\r\nINCR a b\r\nTTL a b\r\n",
		"DEL a b\r\nSET a 1\r\nSET b 2\r\nDEL a b nokey a\r\n",
	}
	for _, req := range cases {
		exchange(t, redis, cleanup)
		exchange(t, prog.Addr, cleanup)
		want := exchange(t, redis, req)
		got := exchange(t, prog.Addr, req)
		if strings.Join(got, "") != strings.Join(want, "") {
			t.Errorf("%q:\n  redis:   %s\n  example: %s", trunc(req), quoteAll(want), quoteAll(got))
		}
	}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, " ")
}
