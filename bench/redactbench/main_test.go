package main

import (
	"bytes"
	"testing"
)

// TestSplit checks that chunks cover the text in order, without gaps, and
// end at line ends, so that no planted secret is cut in two.
func TestSplit(t *testing.T) {
	text := bytes.Repeat([]byte("line of text\nanother, longer line of text\n"), 1000)
	for _, size := range []int{1, 10, 100, 4096, len(text) + 1} {
		chunks := split(text, size)
		pos := 0
		for i, c := range chunks {
			if c.start != pos || c.end <= c.start || !bytes.Equal(c.text, text[c.start:c.end]) {
				t.Fatalf("size %d, chunk %d: [%d, %d) after %d", size, i, c.start, c.end, pos)
			}
			if c.end < len(text) && text[c.end-1] != '\n' && size > 50 {
				t.Fatalf("size %d, chunk %d ends mid-line", size, i)
			}
			pos = c.end
		}
		if pos != len(text) {
			t.Fatalf("size %d: chunks cover %d of %d bytes", size, pos, len(text))
		}
	}
}

func TestTimeRoundsMedian(t *testing.T) {
	n := 0
	if d := timeRounds(3, func() { n++ }); d.wall < 0 || d.cpu < 0 || n != 3 {
		t.Fatalf("ran %d times, median %v", n, d)
	}
}
