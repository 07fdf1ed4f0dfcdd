//go:build linux || darwin || freebsd

package main

import (
	"strconv"
	"strings"
	"testing"
)

// parseInt takes exactly what Redis's string2ll takes: the canonical decimal form of an
// int64 (what strconv.FormatInt prints), nothing else.
func FuzzHostile7ParseInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "007", "+5", " 5", "5 ", "", "-", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809", "99999999999999999999", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseInt(s)
		w, err := strconv.ParseInt(s, 10, 64)
		want := err == nil && strconv.FormatInt(w, 10) == s
		if ok != want || ok && v != w {
			t.Fatalf("parseInt(%q) = %d, %v; want %d, %v", s, v, ok, w, want)
		}
	})
}

// splitInline never panics, and on a line without quotes or backslashes it splits on
// ASCII white space like strings.Fields.
func FuzzHostile7SplitInline(f *testing.F) {
	for _, s := range []string{`SET k "hello world"`, `"a\x41\xzz\n"`, `'it\'s'`, `"x"y`, `'a''b'`, `"\`, `  `, "a\tb\vc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args, err := splitInline([]byte(s))
		if strings.ContainsAny(s, "\"'\\") {
			return
		}
		plain := true
		for i := 0; i < len(s); i++ {
			plain = plain && s[i] < 0x80
		}
		if !plain {
			return
		}
		want := strings.Fields(s)
		if err != nil || strings.Join(args, "\x00") != strings.Join(want, "\x00") || len(args) != len(want) {
			t.Fatalf("splitInline(%q) = %q, %v; want %q", s, args, err, want)
		}
	})
}
