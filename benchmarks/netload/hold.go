package netload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HoldMode is what the connection holder does on each connection before leaving it
// idle: one exchange, so that every connection has been accepted and served once (a
// server that allocates on first read is billed for it) and so the holder knows the
// server has accepted them all when the last exchange completes.
type HoldMode int

const (
	// HoldEcho sends 64 bytes and reads them back, for echo servers.
	HoldEcho HoldMode = iota + 1
	// HoldHTTP sends GET /plaintext and reads the response (200, PlaintextBody), for
	// HTTP servers: the connection is then an idle keep-alive connection.
	HoldHTTP
)

// String names the mode as the holder's environment spells it.
func (m HoldMode) String() string {
	switch m {
	case HoldEcho:
		return "echo"
	case HoldHTTP:
		return "http"
	}
	return "HoldMode(" + strconv.Itoa(int(m)) + ")"
}

func parseHoldMode(s string) (HoldMode, error) {
	switch s {
	case "echo":
		return HoldEcho, nil
	case "http":
		return HoldHTTP, nil
	}
	return 0, fmt.Errorf("netload: unknown hold mode %q", s)
}

// The environment of a holder process. holdEnv set marks the process as a holder.
const (
	holdEnv        = "BLITZ_NETLOAD_HOLD"
	holdEnvAddr    = "BLITZ_NETLOAD_HOLD_ADDR"
	holdEnvConns   = "BLITZ_NETLOAD_HOLD_CONNS"
	holdEnvMode    = "BLITZ_NETLOAD_HOLD_MODE"
	holdEnvTimeout = "BLITZ_NETLOAD_HOLD_TIMEOUT"
	holdReady      = "ready"
)

// RunHolderIfChild makes the current process a connection holder, and exits it, if
// it was started by [IdleConnMemory]; otherwise it returns at once. IdleConnMemory
// starts the running executable again (os.Executable) as the holder, so every program
// that measures idle memory must call this first thing: a test binary from TestMain,
// a command from main or an init function.
//
// The holder raises its open-file soft limit to the hard one, opens the connections,
// does one exchange on each (see HoldMode), prints "ready N" on stdout, then holds them
// idle until its stdin is closed (or its timeout passes), closes them and exits.
func RunHolderIfChild() {
	if os.Getenv(holdEnv) == "" {
		return
	}
	os.Exit(holdMain(os.Stdin, os.Stdout, os.Stderr))
}

func holdMain(stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "netload holder:", err)
		return 1
	}
	addr := os.Getenv(holdEnvAddr)
	if err := checkLoopback(addr); err != nil {
		return fail(err)
	}
	n, err := strconv.Atoi(os.Getenv(holdEnvConns))
	if err != nil || n <= 0 {
		return fail(fmt.Errorf("bad %s %q", holdEnvConns, os.Getenv(holdEnvConns)))
	}
	mode, err := parseHoldMode(os.Getenv(holdEnvMode))
	if err != nil {
		return fail(err)
	}
	timeout, err := time.ParseDuration(os.Getenv(holdEnvTimeout))
	if err != nil || timeout <= 0 {
		return fail(fmt.Errorf("bad %s %q", holdEnvTimeout, os.Getenv(holdEnvTimeout)))
	}
	if _, err := raiseNoFileLimit(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conns, err := holdOpen(ctx, addr, n, mode)
	if err != nil {
		return fail(err)
	}
	// Close with an RST (SO_LINGER 0): 15,000 orderly closes would leave as many
	// connections in TIME_WAIT on a shared machine for a minute.
	defer func() {
		for _, c := range conns {
			c.SetLinger(0)
			c.Close()
		}
	}()
	fmt.Fprintf(stdout, "%s %d\n", holdReady, n)
	// Hold until the parent closes our stdin (EOF or an error both mean "release"), or
	// the timeout passes: a parent that died must not leave us holding forever.
	released := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin)
		close(released)
	}()
	select {
	case <-released:
		return 0
	case <-ctx.Done():
		return fail(fmt.Errorf("not released within %v", timeout))
	}
}

// holdOpen opens n connections, 32 at a time, and does one exchange on each.
func holdOpen(ctx context.Context, addr string, n int, mode HoldMode) ([]*net.TCPConn, error) {
	conns := make([]*net.TCPConn, n)
	var next atomic.Int64
	var errs errList
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	for range min(n, 32) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d net.Dialer
			rd := bufio.NewReaderSize(nil, 4096)
			msg := bytes.Repeat([]byte("idle"), 16)
			in := make([]byte, len(msg))
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				c, err := holdOne(ctx, &d, addr, mode, deadline, rd, msg, in)
				if err != nil {
					errs.add(fmt.Errorf("connection %d of %d: %w", i+1, n, err))
					cancel()
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	if err := errs.err(); err != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	return conns, nil
}

func holdOne(ctx context.Context, d *net.Dialer, addr string, mode HoldMode, deadline time.Time, rd *bufio.Reader, msg, in []byte) (*net.TCPConn, error) {
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := nc.(*net.TCPConn)
	err = func() error {
		if err := c.SetDeadline(deadline); err != nil {
			return err
		}
		switch mode {
		case HoldEcho:
			if _, err := c.Write(msg); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, in); err != nil {
				return err
			}
			if !bytes.Equal(in, msg) {
				return ErrMismatch
			}
		case HoldHTTP:
			if _, err := io.WriteString(c, "GET "+PlaintextPath+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				return err
			}
			rd.Reset(c)
			status, body, err := ReadResponse(rd, in[:0])
			if err != nil {
				return err
			}
			if status != 200 || string(body) != PlaintextBody {
				return fmt.Errorf("%w: status %d, body %q", ErrBadResponse, status, body)
			}
			if rd.Buffered() != 0 {
				return fmt.Errorf("%w: %d bytes after the response", ErrBadResponse, rd.Buffered())
			}
		}
		return c.SetDeadline(time.Time{})
	}()
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// HoldConfig shapes an idle-connection memory measurement.
type HoldConfig struct {
	Conns int      // idle connections to hold; > 0
	Mode  HoldMode // the exchange done on each connection first
	// Settle is how long to wait, after the holder reports every connection served,
	// before the "after" reading, so the server's last handlers park (default 200ms).
	Settle time.Duration
	// Timeout bounds the whole measurement, the holder's life included (default
	// DefaultTimeout plus 2ms per connection: 60 s for 15,000).
	Timeout time.Duration
}

// MemResult is an idle-connection memory measurement: the server process's heap in use
// plus stack in use (runtime.MemStats HeapInuse + StackInuse, after a GC) before the
// holder connected and while it held every connection idle.
type MemResult struct {
	Conns         int
	Before, After uint64
	// RSSBefore and RSSAfter are the process's resident set at the same two moments,
	// after the free heap was returned to the OS (zero where unknown). They also count
	// memory outside the Go heap, such as rings or buffers a server maps itself, but
	// move with anything else the process touches: a cross-check, noisier than Before
	// and After.
	RSSBefore, RSSAfter uint64
}

// RSSPerConn is the resident-set growth per connection, in bytes; zero where the
// resident set is unknown.
func (m MemResult) RSSPerConn() float64 {
	if m.Conns == 0 || m.RSSBefore == 0 || m.RSSAfter == 0 {
		return 0
	}
	return (float64(m.RSSAfter) - float64(m.RSSBefore)) / float64(m.Conns)
}

// PerConn is the growth per connection, in bytes (negative if the process shrank,
// which only noise can do).
func (m MemResult) PerConn() float64 {
	if m.Conns == 0 {
		return 0
	}
	return (float64(m.After) - float64(m.Before)) / float64(m.Conns)
}

// memInUse is heap in use plus stacks in use after two GCs (the second frees what the
// first's finalizers released), and the resident set once the free heap has been
// returned to the OS.
func memInUse() (inUse, rss uint64) {
	runtime.GC()
	debug.FreeOSMemory() // a GC too
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse, residentBytes()
}

// residentBytes reads the resident set size from /proc/self/statm (Linux); zero
// elsewhere or on any error.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// IdleConnMemory starts srv in this process on a free loopback port, starts a holder
// child process (this executable again, see RunHolderIfChild) that opens cfg.Conns
// connections to it, does one exchange on each and holds them idle, and returns the
// server process's memory before and while they are held. The server's and the
// holder's open-file soft limits are raised to the hard limit; a count the limit cannot
// accommodate fails at once.
func IdleConnMemory(ctx context.Context, srv Server, cfg HoldConfig) (res MemResult, err error) {
	if cfg.Conns <= 0 || (cfg.Mode != HoldEcho && cfg.Mode != HoldHTTP) {
		return res, fmt.Errorf("netload: IdleConnMemory: Conns %d must be > 0 and Mode (%v) HoldEcho or HoldHTTP", cfg.Conns, cfg.Mode)
	}
	if srv.Start == nil {
		return res, fmt.Errorf("netload: IdleConnMemory: server %q has no Start function", srv.Name)
	}
	if os.Getenv(holdEnv) != "" {
		// We are a holder whose program never called RunHolderIfChild: measuring here
		// would start a holder of our own, and so on without end.
		return res, errors.New("netload: IdleConnMemory: this process was started as a connection holder, but its program does not call RunHolderIfChild first")
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 200 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout + time.Duration(cfg.Conns)*2*time.Millisecond
	}
	limit, err := raiseNoFileLimit()
	if err != nil {
		return res, err
	}
	// Each connection costs the server one descriptor; keep 64 spare for the runtime,
	// the listener and the pipes to the holder.
	if limit > 0 && uint64(cfg.Conns)+64 > limit {
		return res, fmt.Errorf("netload: IdleConnMemory: %d connections do not fit the open-file limit %d", cfg.Conns, limit)
	}
	exe, err := os.Executable()
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	addr, stop, err := srv.Start("127.0.0.1:0")
	if err != nil {
		return res, fmt.Errorf("netload: IdleConnMemory: start %s: %w", srv.Name, err)
	}
	defer func() {
		if serr := stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("netload: IdleConnMemory: stop %s: %w", srv.Name, serr))
		}
	}()
	if err := checkLoopback(addr); err != nil {
		return res, fmt.Errorf("netload: IdleConnMemory: %s bound %q: %w", srv.Name, addr, err)
	}
	res.Conns = cfg.Conns
	res.Before, res.RSSBefore = memInUse()

	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(),
		holdEnv+"=1", holdEnvAddr+"="+addr, holdEnvConns+"="+strconv.Itoa(cfg.Conns),
		holdEnvMode+"="+cfg.Mode.String(), holdEnvTimeout+"="+cfg.Timeout.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return res, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("netload: IdleConnMemory: start holder: %w", err)
	}
	// The holder ends when stdin closes; Wait collects it whatever happened below.
	defer func() {
		stdin.Close()
		if werr := cmd.Wait(); werr != nil {
			err = errors.Join(err, fmt.Errorf("netload: holder: %w: %s", werr, strings.TrimSpace(stderr.String())))
		}
	}()
	line, rerr := bufio.NewReader(stdout).ReadString('\n')
	if want := fmt.Sprintf("%s %d\n", holdReady, cfg.Conns); rerr != nil || line != want {
		cancel() // kill the holder if it is still running, so Wait returns
		return res, fmt.Errorf("netload: IdleConnMemory: holder did not report %q (got %q, %v)", strings.TrimSpace(want), line, rerr)
	}
	time.Sleep(cfg.Settle)
	res.After, res.RSSAfter = memInUse()
	return res, nil
}
