package lockfree

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSpinModelsInSync keeps each deliberately broken spin model (spin/*.broken.pml)
// identical to the model it breaks, below the "==== model ====" marker, except for the
// one #define line that selects the broken variant. Without it a fix to the real model
// could silently leave the broken one testing something else. (.ci/spin.sh runs spin
// on all of them: the models must verify, the broken ones must be rejected.)
func TestSpinModelsInSync(t *testing.T) {
	broken, err := filepath.Glob(filepath.Join("spin", "*.broken.pml"))
	if err != nil || len(broken) == 0 {
		t.Fatalf("no broken spin models found (%v)", err)
	}
	define := regexp.MustCompile(`(?m)^#define (FENCED|VARIANT) .*$`)
	body := func(path string) string {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(string(data), "/* ==== model ==== */")
		if !ok {
			t.Fatalf("%s has no model marker", path)
		}
		if n := len(define.FindAllString(after, -1)); n != 1 {
			t.Fatalf("%s: %d variant #define lines, want 1", path, n)
		}
		return after
	}
	for _, b := range broken {
		name := filepath.Base(b)
		base := name[:strings.IndexAny(name, ".-")] + ".pml"
		want, got := body(filepath.Join("spin", base)), body(b)
		if define.FindString(want) == define.FindString(got) {
			t.Errorf("%s selects the same variant as %s", name, base)
		}
		if define.ReplaceAllString(want, "") != define.ReplaceAllString(got, "") {
			t.Errorf("%s differs from %s beyond the variant #define line", name, base)
		}
	}
}
