// Package runex builds and starts an example program for its test: on a free loopback
// port, with its output read line by line under a watchdog.
package runex

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Program is an example server started by Start.
type Program struct {
	Cmd *exec.Cmd
	// Addr is what the program printed after "listening on " in its first line, up to
	// the next space.
	Addr  string
	t     *testing.T
	lines chan string
}

// Start builds the main package in the current directory, starts it with args (which
// should include "-addr", "127.0.0.1:0"), and waits for its first line, which must say
// where it listens. The process is killed when the test ends, if it still runs.
func Start(t *testing.T, args ...string) *Program {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "example")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	p := &Program{Cmd: cmd, t: t, lines: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	first := p.Next()
	_, rest, ok := strings.Cut(first, "listening on ")
	if !ok {
		t.Fatalf("first line %q does not say where it listens", first)
	}
	p.Addr, _, _ = strings.Cut(rest, " ")
	return p
}

// Next returns the program's next line of output; it fails the test if none comes
// within 30 seconds, and returns "" once the output has ended.
func (p *Program) Next() string {
	p.t.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-time.After(30 * time.Second):
		p.t.Fatal("watchdog: the server printed nothing for 30s")
		return ""
	}
}

// Run runs the program that Start built once more, with args, and returns what it wrote
// (standard output and error together) and its exit code. It fails the test if the
// program has not exited within 30 seconds: a program that should refuse to start must
// not hang.
func (p *Program) Run(args ...string) (output string, code int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Cmd.Path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		p.t.Fatalf("watchdog: %v did not exit within 30s; it wrote %q", args, out.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	p.t.Fatalf("running %v: %v", args, err)
	return "", 0
}

// Wait waits for the program to exit (after a signal, say) and returns its exit code;
// it fails the test if the program has not exited within 30 seconds.
func (p *Program) Wait() int {
	p.t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &ee):
			return ee.ExitCode()
		}
		p.t.Fatalf("waiting for the program: %v", err)
	case <-time.After(30 * time.Second):
		p.t.Fatal("watchdog: the program did not exit within 30s")
	}
	return 0
}

// RSS returns the program's resident memory in bytes, read from /proc (Linux); ok is
// false where that cannot be read.
func (p *Program) RSS() (n int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Cmd.Process.Pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, found := strings.CutPrefix(l, "VmRSS:"); found {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
