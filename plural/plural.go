// Package plural writes a count with its noun in the right number, so
// that what airlock prints reads "1 file" and "2 files", never "1 files".
//
//	plural.Count(1, "file", "files")      // "1 file"
//	plural.Count(3, "entry", "entries")   // "3 entries"
package plural

import "strconv"

// Count is n followed by one when n is 1 or -1, else by many.
func Count(n int, one, many string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Bytes writes a size as people write one: in the largest binary unit it
// reaches, exactly when that unit divides it (512MiB, 8GiB), else to one
// decimal (1.5MiB); below 1KiB in bytes ("1 byte", "300 bytes").
func Bytes(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		switch {
		case n != 0 && n%(1<<u.shift) == 0:
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		case n >= 1<<u.shift || -n >= 1<<u.shift:
			return strconv.FormatFloat(float64(n)/float64(int64(1)<<u.shift), 'f', 1, 64) + u.name
		}
	}
	return Count(int(n), "byte", "bytes")
}
