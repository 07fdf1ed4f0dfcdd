// Command blitzbench runs the blitz-go benchmark suites and prints comparison tables.
//
// Each suite (registered by a benchmarks/suite_<name>.go file) is a list of cases; each
// case measures our implementation and its baselines one after the other in this
// process with testing.Benchmark, so they share the machine's state.
//
// Usage:
//
//	go run ./benchmarks/cmd/blitzbench [flags]
//
// Progress lines go to stderr; the comparison tables go to stdout. Each row is labelled
// ours, baseline (outside code), our variant (another implementation of ours) or
// reference (a figure such as the machine's copy bandwidth). A case's targets print "met"
// or "missed" beside the row they concern, and the run ends with the count of targets met
// and the list of those missed or not measured. The exit status is 1 only if a benchmark
// body failed (2 for bad flags): a missed target is information, not a failure, since
// figures on a shared or small machine swing. The flags are:
//
//	-list              list the suites and their cases (with roles and targets), then exit
//	-suite a,b         run only these suites (default: all)
//	-run REGEXP        run only the cases whose name matches
//	-quick             smaller inputs and a 200ms benchtime: the whole run in about a minute
//	-benchtime D       time per measurement (default 1s, or 200ms with -quick)
//	-count N           measure each implementation N times, alternating between the
//	                   implementations of a case, and report the median (default 1)
//	-json FILE         also write the results as JSON to FILE ("-" for stdout, which then
//	                   replaces the tables)
//	-out DIR           write DIR/report.md, DIR/results.json, one DIR/<suite>.svg chart
//	                   per suite and DIR/report.html, a self-contained page with every
//	                   chart inline (ratios, scaling, targets, the machine)
//	-from FILE         measure nothing: read a results.json written earlier and write
//	                   its -out files and -results document from it
//	-results FILE      rewrite the "## Full report" section of FILE (benchmarks/RESULTS.md)
//	                   from the run's results, keeping the prose above it
//	-cpuprofile FILE   write a CPU profile of the whole run, for go tool pprof
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/blitzgo/blitz/benchmarks"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("blitzbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		list      = fs.Bool("list", false, "list the suites and their cases (with roles and targets), then exit")
		suiteArg  = fs.String("suite", "", "comma-separated suite `names` to run (default: all)")
		runArg    = fs.String("run", "", "run only the cases whose name matches `regexp`")
		quick     = fs.Bool("quick", false, "smaller inputs and benchtime 200ms: the whole run in about a minute")
		benchtime = fs.Duration("benchtime", 0, "time per measurement `d` (default 1s, or 200ms with -quick)")
		count     = fs.Int("count", 1, "measure each implementation `n` times, alternating within a case, and keep the median")
		jsonPath  = fs.String("json", "", "also write results as JSON to `file` (\"-\": stdout, instead of the tables)")
		outDir    = fs.String("out", "", "write report.md, results.json, <suite>.svg charts and report.html into `dir`")
		fromPath  = fs.String("from", "", "measure nothing: render -out and -results from a results.json `file` written earlier")
		results   = fs.String("results", "", "rewrite the \"## Full report\" section of `file` (benchmarks/RESULTS.md) from the results")
		cpuProf   = fs.String("cpuprofile", "", "write a CPU profile of the whole run to `file` (go tool pprof)")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: blitzbench [flags]\n\n"+
			"Runs the registered benchmark suites; each case measures ours and its baselines in\n"+
			"this process and prints per case our figure, each baseline's, allocs/op and the ratio.\n"+
			"Progress goes to stderr, tables to stdout.\n\nSuites:")
		for _, s := range benchmarks.Suites() {
			fmt.Fprintf(stderr, " %s", s.Name)
		}
		fmt.Fprintf(stderr, "\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "blitzbench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg := benchmarks.Config{Quick: *quick}
	if *fromPath != "" {
		return render(*fromPath, *outDir, *results, stderr)
	}

	suites, err := selectSuites(*suiteArg)
	if err != nil {
		fmt.Fprintln(stderr, "blitzbench:", err)
		return 2
	}
	var filter *regexp.Regexp
	if *runArg != "" {
		if filter, err = regexp.Compile(*runArg); err != nil {
			fmt.Fprintf(stderr, "blitzbench: -run: %v\n", err)
			return 2
		}
	}
	if *list {
		for _, s := range suites {
			fmt.Fprintf(stdout, "%s: %s\n", s.Name, s.Title)
			for _, c := range s.Cases(cfg) {
				if filter != nil && !filter.MatchString(c.Name) {
					continue
				}
				names := []string{c.Ours.Name + " (ours)"}
				for _, b := range c.Baselines {
					if r := c.Roles[b.Name]; r != benchmarks.RoleBaseline {
						names = append(names, b.Name+" ("+r.String()+")")
					} else {
						names = append(names, b.Name)
					}
				}
				fmt.Fprintf(stdout, "  %-32s %s\n", c.Name, strings.Join(names, ", "))
				for _, t := range c.Targets {
					fmt.Fprintf(stdout, "  %-32s target: %s\n", "", benchmarks.TargetText(t, c))
				}
			}
		}
		return 0
	}

	bt := *benchtime
	if bt == 0 {
		bt = time.Second
		if *quick {
			bt = 200 * time.Millisecond
		}
	}
	if bt < 0 {
		fmt.Fprintln(stderr, "blitzbench: -benchtime must be positive")
		return 2
	}
	if *count < 1 {
		fmt.Fprintln(stderr, "blitzbench: -count must be at least 1")
		return 2
	}
	// testing.Benchmark reads its duration from the testing package's flag, which only
	// exists after testing.Init; setting it on the default flag set keeps those test
	// flags out of our own -help.
	testing.Init()
	if err := flag.Set("test.benchtime", bt.String()); err != nil {
		fmt.Fprintln(stderr, "blitzbench: setting benchtime:", err)
		return 2
	}

	report := benchmarks.NewReport(bt, *quick)
	report.Count = *count
	fmt.Fprintf(stderr, "blitzbench: %s %s/%s, %d CPUs, GOMAXPROCS %d, %s; benchtime %s\n",
		report.GoVersion, report.GOOS, report.GOARCH, report.NumCPU, report.GOMAXPROCS, report.CPU, bt)
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			fmt.Fprintln(stderr, "blitzbench:", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "blitzbench:", err)
			f.Close()
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	tablesTo := stdout
	if *jsonPath == "-" {
		tablesTo = io.Discard
	}
	for _, s := range suites {
		fmt.Fprintf(stderr, "blitzbench: suite %s: %s\n", s.Name, s.Title)
		res := benchmarks.RunSuite(s, benchmarks.RunOptions{Config: cfg, Filter: filter, Progress: stderr, Count: *count})
		report.Suites = append(report.Suites, res)
		if err := benchmarks.WriteTable(tablesTo, res); err != nil {
			fmt.Fprintln(stderr, "blitzbench:", err)
			return 1
		}
	}

	// Missed targets are listed, not failed: the exit status only reports broken bodies.
	if err := benchmarks.WriteTargetSummary(tablesTo, report.Suites); err != nil {
		fmt.Fprintln(stderr, "blitzbench:", err)
		return 1
	}

	if *jsonPath != "" {
		if err := writeJSON(*jsonPath, stdout, report); err != nil {
			fmt.Fprintln(stderr, "blitzbench:", err)
			return 1
		}
	}
	if *outDir != "" {
		if err := writeOut(*outDir, report); err != nil {
			fmt.Fprintln(stderr, "blitzbench:", err)
			return 1
		}
		fmt.Fprintf(stderr, "blitzbench: report written to %s and %s\n", filepath.Join(*outDir, "report.md"), filepath.Join(*outDir, "report.html"))
	}
	if *results != "" {
		if err := updateResults(*results, report); err != nil {
			fmt.Fprintln(stderr, "blitzbench:", err)
			return 1
		}
	}
	for _, s := range report.Suites {
		for _, c := range s.Cases {
			for _, ir := range c.Impls {
				if ir.Error != "" {
					fmt.Fprintf(stderr, "blitzbench: %s/%s/%s: %s\n", s.Name, c.Name, ir.Name, ir.Error)
					return 1
				}
			}
		}
	}
	return 0
}

// selectSuites resolves the -suite list; an unknown name is an error that lists the
// known ones.
func selectSuites(arg string) ([]benchmarks.Suite, error) {
	all := benchmarks.Suites()
	if arg == "" {
		return all, nil
	}
	byName := map[string]benchmarks.Suite{}
	var names []string
	for _, s := range all {
		byName[s.Name] = s
		names = append(names, s.Name)
	}
	var out []benchmarks.Suite
	seen := map[string]bool{}
	for _, n := range strings.Split(arg, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		s, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("unknown suite %q (known: %s)", n, strings.Join(names, ", "))
		}
		seen[n] = true
		out = append(out, s)
	}
	return out, nil
}

func writeJSON(path string, stdout io.Writer, r *benchmarks.Report) error {
	if path == "-" {
		return benchmarks.WriteJSON(stdout, r)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := benchmarks.WriteJSON(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeOut(dir string, r *benchmarks.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fn func(io.Writer) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	if err := write("results.json", func(w io.Writer) error { return benchmarks.WriteJSON(w, r) }); err != nil {
		return err
	}
	for _, s := range r.Suites {
		if err := write(s.Name+".svg", func(w io.Writer) error { return benchmarks.WriteSVG(w, s) }); err != nil {
			return err
		}
	}
	if err := write("report.html", func(w io.Writer) error { return benchmarks.WriteHTML(w, r) }); err != nil {
		return err
	}
	return write("report.md", func(w io.Writer) error { return benchmarks.WriteMarkdown(w, r, true) })
}

// render writes the -out files and the -results document from a results.json written
// by an earlier run, without measuring anything.
func render(from, outDir, results string, stderr io.Writer) int {
	if outDir == "" && results == "" {
		fmt.Fprintln(stderr, "blitzbench: -from needs -out or -results (or both)")
		return 2
	}
	data, err := os.ReadFile(from)
	if err != nil {
		fmt.Fprintln(stderr, "blitzbench:", err)
		return 1
	}
	var r benchmarks.Report
	if err := json.Unmarshal(data, &r); err != nil {
		fmt.Fprintf(stderr, "blitzbench: %s is not a results.json: %v\n", from, err)
		return 1
	}
	if outDir != "" {
		if err := writeOut(outDir, &r); err != nil {
			fmt.Fprintln(stderr, "blitzbench:", err)
			return 1
		}
	}
	if results != "" {
		if err := updateResults(results, &r); err != nil {
			fmt.Fprintln(stderr, "blitzbench:", err)
			return 1
		}
	}
	return 0
}

// updateResults rewrites the generated section of the results document at path; a
// missing file is created with that section alone.
func updateResults(path string, r *benchmarks.Report) error {
	doc, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := benchmarks.UpdateResults(doc, r)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
