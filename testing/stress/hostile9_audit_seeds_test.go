package stress

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The package's promise (doc.go, harness_test.go): every test draws its random choices
// from the run's seed, which a failing test prints with the command that replays it. A
// test that seeds its sources from the clock cannot be replayed, and one that seeds them
// with constants runs the same plan on every run, so its "random" timing is not random
// across runs. This test reads the package's own test files and holds every test to it.

// globalRandFuncs are math/rand(/v2) functions that draw from the process-wide source,
// which no seed of ours controls.
var globalRandFuncs = map[string]bool{
	"Int": true, "IntN": true, "N": true, "Int32": true, "Int32N": true, "Int64": true, "Int64N": true,
	"Uint": true, "UintN": true, "Uint32": true, "Uint32N": true, "Uint64": true, "Uint64N": true,
	"Float32": true, "Float64": true, "Perm": true, "Shuffle": true, "NormFloat64": true, "ExpFloat64": true,
	"Intn": true, "Int31": true, "Int31n": true, "Int63": true, "Int63n": true, "Seed": true,
}

// randSourceFuncs create a seeded source or generator.
var randSourceFuncs = map[string]bool{"New": true, "NewPCG": true, "NewChaCha8": true, "NewSource": true}

// seedProblems lists, for the Go files named, every use of randomness that does not come
// from the run's seed: a call to the process-wide source, a source seeded from the
// clock, and a Test function that creates a source without calling seeded or runSeed.
func seedProblems(t *testing.T, fset *token.FileSet, files map[string]*ast.File) []string {
	t.Helper()
	var problems []string
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := files[name]
		// The local names of math/rand and math/rand/v2 in this file (crypto/rand is
		// another package that happens to share the name).
		randNames := map[string]bool{}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path != "math/rand" && path != "math/rand/v2" {
				continue
			}
			local := filepath.Base(strings.TrimSuffix(path, "/v2"))
			if imp.Name != nil {
				local = imp.Name.Name
			}
			randNames[local] = true
		}
		if len(randNames) == 0 {
			continue
		}
		randCall := func(n ast.Node) (string, *ast.CallExpr) {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return "", nil
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return "", nil
			}
			if id, ok := sel.X.(*ast.Ident); ok && randNames[id.Name] {
				return sel.Sel.Name, call
			}
			return "", nil
		}
		mentionsClock := func(n ast.Node) bool {
			found := false
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && sel.Sel.Name == "Now" {
						found = true
					}
				}
				return !found
			})
			return found
		}
		ast.Inspect(f, func(n ast.Node) bool {
			fn, call := randCall(n)
			if call == nil {
				return true
			}
			pos := fset.Position(call.Pos())
			where := filepath.Base(pos.Filename) + ":" + strconv.Itoa(pos.Line)
			switch {
			case globalRandFuncs[fn]:
				problems = append(problems, where+": rand."+fn+" draws from the process-wide source, not the run's seed")
			case randSourceFuncs[fn] && fn != "New" && mentionsClock(call): // New's clock is its source's
				problems = append(problems, where+": rand."+fn+" seeded from the clock: the run cannot be replayed")
			}
			return true
		})
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Body == nil || !strings.HasPrefix(fd.Name.Name, "Test") {
				continue
			}
			makesSource, usesSeed := false, false
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if fn, call := randCall(n); call != nil && randSourceFuncs[fn] {
					makesSource = true
				}
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && (id.Name == "seeded" || id.Name == "runSeed") {
						usesSeed = true
					}
				}
				return true
			})
			if makesSource && !usesSeed {
				pos := fset.Position(fd.Pos())
				problems = append(problems, filepath.Base(pos.Filename)+":"+strconv.Itoa(pos.Line)+": "+fd.Name.Name+
					" makes random sources without seeded(t) or runSeed(): its choices ignore the run's seed (STRESS_SEED cannot replay them)")
			}
		}
	}
	return problems
}

// TestHostile9SeedsComeFromTheRun checks this package's test files.
func TestHostile9SeedsComeFromTheRun(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*_test.go")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test files found: %v", err)
	}
	files := map[string]*ast.File{}
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
	}
	for _, p := range seedProblems(t, fset, files) {
		t.Error(p)
	}
}

// TestHostile9SeedCheckerFindsProblems: the checker above flags each kind of problem,
// and passes a test that derives its sources from seeded(t) (so its silence on the
// package is not blindness).
func TestHostile9SeedCheckerFindsProblems(t *testing.T) {
	const src = `package stress

import (
	crand "crypto/rand"
	"math/rand/v2"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	r := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	_ = r
}

func TestFixed(t *testing.T) {
	go func(seed uint64) { _ = rand.New(rand.NewPCG(seed, 7)) }(3)
}

func TestGlobal(t *testing.T) {
	_ = rand.IntN(3)
	_, _ = crand.Read(nil)
}

func TestGood(t *testing.T) {
	r := seeded(t)
	s := r.Uint64()
	go func() { _ = rand.New(rand.NewPCG(s, 1)) }()
}

func helper(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sample_test.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(seedProblems(t, fset, map[string]*ast.File{"sample_test.go": f}), "\n")
	for _, want := range []string{
		"sample_test.go:11: rand.NewPCG seeded from the clock",
		"sample_test.go:10: TestClock makes random sources without seeded(t)",
		"sample_test.go:15: TestFixed makes random sources without seeded(t)",
		"sample_test.go:20: rand.IntN draws from the process-wide source",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the checker missed %q; it reported:\n%s", want, got)
		}
	}
	for _, bad := range []string{"TestGood", "helper", "crand", "Read"} {
		if strings.Contains(got, bad) {
			t.Errorf("the checker flagged %s:\n%s", bad, got)
		}
	}
}
