package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestCapped(t *testing.T) {
	calls := 0
	c := &Capped{Max: 5, OnOver: func() { calls++ }}
	for _, w := range []string{"ab", "cd", "efg", "hij"} {
		if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v: a capped writer never fails", w, n, err)
		}
	}
	if string(c.Bytes()) != "abcde" || !c.Over() || calls != 1 {
		t.Fatalf("kept %q, over %v, OnOver called %d times; want abcde, true, 1", c.Bytes(), c.Over(), calls)
	}
	d := &Capped{Max: 5}
	d.Write([]byte("abcde"))
	if d.Over() {
		t.Fatal("exactly Max bytes is not over")
	}
}

func TestCommandEnv(t *testing.T) {
	got, err := CommandEnv([]string{"A=1"})
	if err != nil || strings.Join(got, " ") != "A=1 HOME=/tmp PATH="+DefaultPath {
		t.Fatalf("CommandEnv = %q, %v", got, err)
	}
	got, _ = CommandEnv([]string{"HOME=/w", "PATH=/bin"})
	if strings.Join(got, " ") != "HOME=/w PATH=/bin" {
		t.Fatalf("set HOME and PATH are kept: %q", got)
	}
	if _, err := CommandEnv([]string{"=x"}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("an entry with no key: %v, want ErrInvalidSpec", err)
	}
}
