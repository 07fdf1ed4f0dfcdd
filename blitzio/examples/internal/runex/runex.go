// Package runex builds and starts an example program for its test: on a free loopback
// port, with its output read line by line under a watchdog.
package runex

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
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
