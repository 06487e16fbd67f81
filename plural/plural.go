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
