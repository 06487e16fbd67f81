package plural

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 entries"}, {1, "1 entry"}, {-1, "-1 entry"}, {2, "2 entries"}, {21, "21 entries"}} {
		if got := Count(tc.n, "entry", "entries"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 1: "1 byte", 1023: "1023 bytes", 1024: "1KiB", 1536: "1.5KiB",
		512 << 20: "512MiB", 8 << 30: "8GiB", 3<<20 + 1: "3.0MiB", 1<<30 + 1<<29: "1.5GiB",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
