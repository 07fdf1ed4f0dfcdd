package blitzio

// A differential pass over child processes, with os/exec as the oracle: for the same
// command, blitzio's Command and an exec.Cmd must agree on what a Go user observes
// (exit statuses, start errors, arguments, environment, standard streams), except where
// blitzio documents a deliberate difference (a non-zero exit is not an error; the
// default streams are inherited; Wait may be called many times).

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// h13Block runs f with BlockOn straight from a plain goroutine (no wrapper: BlockOn
// sees the future itself), with a watchdog.
func h13Block[T any](t *testing.T, rt *Runtime, what string, f Future[T]) T {
	t.Helper()
	type out struct {
		v   T
		err error
	}
	ch := make(chan out, 1)
	go func() { v, err := BlockOn(rt, f); ch <- out{v, err} }()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("%s: BlockOn: %v", what, o.err)
		}
		return o.v
	case <-time.After(20 * time.Second):
		t.Fatalf("watchdog: %s not done in 20s", what)
		panic("unreachable")
	}
}

// h13Script writes an executable shell script.
func h13Script(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// h13SameErr reports how got (blitzio's) differs from want (exec's), "" if it does
// not: both nil, or the same text, the same dynamic type, and the same answers to
// errors.Is for the sentinels a user checks.
func h13SameErr(got, want error) string {
	if (got == nil) != (want == nil) {
		return fmt.Sprintf("blitzio %v, exec %v", got, want)
	}
	if got == nil {
		return ""
	}
	if got.Error() != want.Error() {
		return fmt.Sprintf("text: blitzio %q, exec %q", got, want)
	}
	if fmt.Sprintf("%T", got) != fmt.Sprintf("%T", want) {
		return fmt.Sprintf("type: blitzio %T, exec %T", got, want)
	}
	for _, s := range []error{exec.ErrNotFound, exec.ErrDot, fs.ErrNotExist, fs.ErrPermission,
		syscall.EINVAL, syscall.ENOEXEC, syscall.ENOTDIR, syscall.EACCES, syscall.E2BIG} {
		if errors.Is(got, s) != errors.Is(want, s) {
			return fmt.Sprintf("errors.Is(err, %v): blitzio %v, exec %v (%v)", s, errors.Is(got, s), errors.Is(want, s), got)
		}
	}
	return ""
}

// TestHostile13ProcExitStatusMatchesExec: for exits with a code and deaths by a
// signal, Status, Spawn+Wait (in a task and from BlockOn) and Output report the status
// exec reports: the same exit code, success, wait status, and a String equal to the
// text of exec's *exec.ExitError. A non-zero exit is not an error in blitzio (the
// documented difference): Result.Err is nil.
func TestHostile13ProcExitStatusMatchesExec(t *testing.T) {
	rt := fileRT(t)
	for _, script := range []string{"exit 0", "exit 3", "exit 255", "exit 256", "kill -KILL $$", "kill -TERM $$", "kill -HUP $$", "kill -USR1 $$"} {
		ecmd := exec.Command("sh", "-c", script)
		eerr := ecmd.Run()
		var ee *exec.ExitError
		if eerr != nil && !errors.As(eerr, &ee) {
			t.Fatalf("%s: exec: %v", script, eerr)
		}
		want := ecmd.ProcessState
		c := Command("sh", "-c", script).Stdin(Null).Stdout(Null).Stderr(Null)
		child, err := c.Spawn()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Result[*os.ProcessState]{
			"Status":         run(t, rt, c.Status()),
			"Wait (task)":    run(t, rt, child.Wait()),
			"Wait (BlockOn)": h13Block(t, rt, "Wait", child.Wait()),
		}
		o := h13Block(t, rt, "Output", c.Output())
		got["Output"] = Result[*os.ProcessState]{Value: o.Value.Status, Err: o.Err}
		for how, r := range got {
			if r.Err != nil || r.Value == nil {
				t.Errorf("%s via %s: %v %v; want the status and no error", script, how, r.Value, r.Err)
				continue
			}
			st := r.Value
			if st.ExitCode() != want.ExitCode() || st.Success() != want.Success() || st.String() != want.String() ||
				st.Sys().(syscall.WaitStatus) != want.Sys().(syscall.WaitStatus) {
				t.Errorf("%s via %s: %v (code %d, success %v), exec: %v (code %d, success %v)", script, how,
					st, st.ExitCode(), st.Success(), want, want.ExitCode(), want.Success())
			}
			if ee != nil && st.String() != ee.Error() {
				t.Errorf("%s via %s: status text %q, exec's ExitError says %q", script, how, st, ee.Error())
			}
		}
	}
}

// TestHostile13ProcStartErrorsMatchExec: the start errors a user meets (a missing
// program, an empty name, a directory, a file that is not executable or not a program,
// PATH entries that are directories or relative (exec.ErrDot), relative program paths
// with Dir, a missing or non-directory Dir, NUL bytes in the name, an argument, the
// environment or Dir) are exec's: the same text, type and errors.Is answers, from
// Spawn and from the Output and Status futures; and what succeeds with exec succeeds.
func TestHostile13ProcStartErrorsMatchExec(t *testing.T) {
	rt := fileRT(t)
	tmp := t.TempDir()
	h13Script(t, filepath.Join(tmp, "bin", "h13prog"), "exit 0")
	h13Script(t, filepath.Join(tmp, "pathdir", "x"), "exit 0")
	if err := os.Mkdir(filepath.Join(tmp, "pathdir", "h13prog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "plain"), []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "garbage"), []byte{0x7f, 0, 1, 2, 3, 4, 5, 6}, 0o755); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relBin, err := filepath.Rel(wd, filepath.Join(tmp, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, prog string
		args       []string
		dir, path  string   // path: PATH for the case ("" keeps it)
		env        []string // key, value pairs
	}{
		{name: "missing program", prog: "blitzio-h13-no-such-program"},
		{name: "missing absolute program", prog: filepath.Join(tmp, "nope")},
		{name: "empty name", prog: ""},
		{name: "directory by path", prog: tmp},
		{name: "not executable", prog: filepath.Join(tmp, "plain")},
		{name: "not a program", prog: filepath.Join(tmp, "garbage")},
		{name: "directory in PATH", prog: "h13prog", path: filepath.Join(tmp, "pathdir")},
		{name: "relative PATH entry (ErrDot)", prog: "h13prog", path: relBin},
		{name: "./prog relative to Dir", prog: "./h13prog", dir: filepath.Join(tmp, "bin")},
		{name: "sub/prog relative to Dir", prog: "bin/h13prog", dir: tmp},
		{name: "bare name in Dir, not in PATH", prog: "h13prog", dir: filepath.Join(tmp, "bin"), path: "/usr/bin:/bin"},
		{name: "missing Dir", prog: "true", dir: filepath.Join(tmp, "nope")},
		{name: "Dir is a file", prog: "true", dir: filepath.Join(tmp, "plain")},
		{name: "NUL in an argument", prog: "true", args: []string{"a\x00b"}},
		{name: "NUL in the name", prog: "tr\x00ue"},
		{name: "argument over the kernel's limit (E2BIG)", prog: "true", args: []string{strings.Repeat("x", 200000)}},
		{name: "NUL in the path", prog: "/usr/bin/tr\x00ue"},
		{name: "NUL in Dir", prog: "true", dir: tmp + "\x00x"},
		{name: "NUL in an env value", prog: "true", env: []string{"H13", "a\x00b"}},
		{name: "NUL in an env key", prog: "true", env: []string{"H\x0013", "a"}},
		// exec (and blitzio, which says so) looks a bare name up in the parent's PATH,
		// not in a PATH given to the child (Rust's std and Tokio use the child's).
		{name: "PATH given with Env", prog: "h13prog", env: []string{"PATH", filepath.Join(tmp, "bin")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path != "" {
				t.Setenv("PATH", tc.path)
			}
			// exec's run, the oracle: its environment is the inherited one plus the
			// pairs, as blitzio's Env promises.
			ecmd := exec.Command(tc.prog, tc.args...)
			ecmd.Dir = tc.dir
			if len(tc.env) > 0 {
				ecmd.Env = ecmd.Environ()
				for i := 0; i < len(tc.env); i += 2 {
					ecmd.Env = append(ecmd.Env, tc.env[i]+"="+tc.env[i+1])
				}
			}
			eerr := ecmd.Start()
			if eerr == nil {
				if err := ecmd.Wait(); err != nil {
					t.Fatalf("exec's run: %v", err)
				}
			}
			c := Command(tc.prog, tc.args...).Dir(tc.dir).Stdin(Null).Stdout(Null).Stderr(Null)
			for i := 0; i < len(tc.env); i += 2 {
				c.Env(tc.env[i], tc.env[i+1])
			}
			child, berr := c.Spawn()
			if d := h13SameErr(berr, eerr); d != "" {
				t.Errorf("Spawn: %s", d)
			}
			if berr == nil {
				if st := must(t, rt, child.Wait()); !st.Success() {
					t.Errorf("Spawn: the child exited %v", st)
				}
			}
			if r := run(t, rt, c.Status()); h13SameErr(r.Err, eerr) != "" {
				t.Errorf("Status: %s", h13SameErr(r.Err, eerr))
			}
			if r := h13Block(t, rt, "Output", c.Output()); h13SameErr(r.Err, eerr) != "" {
				t.Errorf("Output: %s", h13SameErr(r.Err, eerr))
			}
		})
	}
}

// TestHostile13ProcArgsMatchExec: arguments with spaces, empty strings, tabs, newlines,
// quotes, shell metacharacters and non-ASCII reach the child unchanged, as with exec;
// the same Cmd's Output futures run at once on two runtimes agree too.
func TestHostile13ProcArgsMatchExec(t *testing.T) {
	rt1, rt2 := fileRT(t), fileRT(t)
	args := []string{"", " ", "a b", "\t", "line\nbreak", `"q'`, "$HOME", "*", "-", "--", "-n", "é€😀", "\\", strings.Repeat("x", 100000)}
	script := `for a in "$@"; do printf '[%s]' "$a"; done`
	want, err := exec.Command("sh", append([]string{"-c", script, "sh"}, args...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	c := Command("sh", "-c", script, "sh").Arg(args...)
	h1, h2 := Spawn(rt1, c.Output()), Spawn(rt2, c.Output())
	for i, h := range []JoinHandle[Result[Output]]{h1, h2} {
		r, err := waitHandleFor(t, h, "Output of the args")
		if err != nil || r.Err != nil {
			t.Fatalf("runtime %d: %v %v", i+1, err, r.Err)
		}
		if !bytes.Equal(r.Value.Stdout, want) {
			t.Errorf("runtime %d: the child saw %q..., exec's saw %q...", i+1, h13Head(r.Value.Stdout), h13Head(want))
		}
	}
}

func h13Head(b []byte) []byte { return b[:min(len(b), 120)] }

// h13Env runs `env -0` for c (blitzio) and returns its sorted entries.
func h13Env(t *testing.T, rt *Runtime, c *Cmd) []string {
	t.Helper()
	o := must(t, rt, c.Output())
	return h13Entries(o.Stdout)
}

func h13Entries(b []byte) []string {
	var es []string
	for e := range bytes.SplitSeq(b, []byte{0}) {
		if len(e) > 0 {
			es = append(es, string(e))
		}
	}
	slices.Sort(es)
	return es
}

// h13Diff lists the entries in one list and not the other.
func h13Diff(got, want []string) string {
	var d []string
	for _, e := range got {
		if !slices.Contains(want, e) {
			d = append(d, "+"+e)
		}
	}
	for _, e := range want {
		if !slices.Contains(got, e) {
			d = append(d, "-"+e)
		}
	}
	return strings.Join(d, " ")
}

// TestHostile13ProcEnvMatchesExec: the child's environment is the one exec gives a
// command whose Env is nil (inherited; with Dir set, exec also sets PWD to it), with
// the Env pairs on top (the last value of a key wins), or, after EnvClear, the pairs
// alone (exec with a non-nil Env). Dir with Env used to give the child the parent's
// PWD: the environment became a non-nil list, for which exec leaves PWD alone, so
// adding any variable silently changed PWD back.
func TestHostile13ProcEnvMatchesExec(t *testing.T) {
	rt := fileRT(t)
	dir := t.TempDir()
	if os.Getenv("PWD") == "" {
		t.Setenv("PWD", "/h13-parent-pwd") // make a stale PWD visible
	}
	type kv = [2]string
	for _, tc := range []struct {
		name  string
		dir   string
		clear bool
		env   []kv
	}{
		{name: "inherited"},
		{name: "inherited, Dir", dir: dir},
		{name: "one var", env: []kv{{"H13_A", "1"}}},
		{name: "one var, Dir", dir: dir, env: []kv{{"H13_A", "1"}}},
		{name: "PWD given, Dir", dir: dir, env: []kv{{"PWD", "/given"}}},
		{name: "duplicates", env: []kv{{"H13_A", "1"}, {"H13_B", "x"}, {"H13_A", "2"}}},
		{name: "override inherited", env: []kv{{"PATH", "/h13"}}},
		{name: "empty value", env: []kv{{"H13_A", ""}}},
		{name: "= in key", env: []kv{{"H13_A=B", "c"}}},
		{name: "cleared", clear: true},
		{name: "cleared, Dir", dir: dir, clear: true},
		{name: "cleared, duplicates", clear: true, env: []kv{{"H13_A", "1"}, {"H13_A", "2"}}},
		{name: "relative Dir", dir: ".", env: []kv{{"H13_A", "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ecmd := exec.Command("/usr/bin/env", "-0")
			ecmd.Dir = tc.dir
			base := ecmd.Environ() // what exec gives a nil Env, PWD for Dir included
			if tc.clear {
				base = []string{}
			}
			for _, p := range tc.env {
				base = append(base, p[0]+"="+p[1])
			}
			if tc.clear || len(tc.env) > 0 {
				ecmd.Env = base
			}
			out, err := ecmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			want := h13Entries(out)
			c := Command("/usr/bin/env", "-0").Dir(tc.dir)
			if tc.clear {
				c.EnvClear()
			}
			for _, p := range tc.env {
				c.Env(p[0], p[1])
			}
			if got := h13Env(t, rt, c); !slices.Equal(got, want) {
				t.Errorf("environment differs from exec's: %s", h13Diff(got, want))
			}
		})
	}
}

// TestHostile13ProcStdioMatchesExec: what each of the child's descriptors 0, 1 and 2 is
// open on, for each Stdio, against exec given the same thing: Inherit is the parent's
// file (exec given os.Stdin, os.Stdout, os.Stderr), Null is the null device (exec's nil
// field), Piped is a pipe. The shell reports its own descriptors (/proc/$$/fd) into a
// file.
func TestHostile13ProcStdioMatchesExec(t *testing.T) {
	rt := fileRT(t)
	// Command substitutions run readlink in a subshell, whose output redirection leaves
	// the shell's own descriptors alone ($$ stays the shell's pid).
	const script = `a=$(readlink /proc/$$/fd/0); b=$(readlink /proc/$$/fd/1); c=$(readlink /proc/$$/fd/2); echo "$a $b $c" >"$0"`
	for _, s := range []Stdio{Inherit, Null, Piped} {
		t.Run([]string{"Inherit", "Null", "Piped"}[s], func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "exec")
			ecmd := exec.Command("sh", "-c", script, report)
			switch s {
			case Inherit:
				ecmd.Stdin, ecmd.Stdout, ecmd.Stderr = os.Stdin, os.Stdout, os.Stderr
			case Piped:
				in, err := ecmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				defer in.Close()
				ecmd.StdoutPipe()
				ecmd.StderrPipe()
			}
			if err := ecmd.Run(); err != nil {
				t.Fatal(err)
			}
			want := h13Report(t, report)
			if s == Inherit {
				for fd := range 3 {
					p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
					if err != nil {
						t.Fatal(err)
					}
					if p = h13Norm(p); len(want) != 3 || want[fd] != p {
						t.Fatalf("exec's child's descriptors %q, the parent's fd %d is %q", want, fd, p)
					}
				}
			}
			if got := h13ChildFDs(t, rt, script, s); !slices.Equal(got, want) {
				t.Errorf("the child's descriptors 0, 1, 2 with %v: %q, exec's with the same: %q", s, got, want)
			}
		})
	}
}

// h13Norm names every pipe alike.
func h13Norm(s string) string {
	if strings.HasPrefix(s, "pipe:") {
		return "pipe"
	}
	return s
}

func h13Report(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(b))
	for i := range got {
		got[i] = h13Norm(got[i])
	}
	return got
}

// h13ChildFDs runs script with all three streams s and returns its report.
func h13ChildFDs(t *testing.T, rt *Runtime, script string, s Stdio) []string {
	t.Helper()
	report := filepath.Join(t.TempDir(), "blitzio")
	child, err := Command("sh", "-c", script, report).Stdin(s).Stdout(s).Stderr(s).Spawn()
	if err != nil {
		t.Fatal(err)
	}
	if child.Stdin != nil {
		must(t, rt, child.Stdin.Close())
	}
	for _, f := range []*File{child.Stdout, child.Stderr} {
		if f != nil {
			must(t, rt, readAll(f))
			must(t, rt, f.Close())
		}
	}
	if st := must(t, rt, child.Wait()); !st.Success() {
		t.Fatalf("the reporting child exited %v", st)
	}
	return h13Report(t, report)
}
