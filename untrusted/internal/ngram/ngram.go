// Package ngram is the injection scanner's learned half: a logistic
// regression over hashed character n-grams and word uni- and bigrams of
// normalised text, scored over sliding windows of the text and taken at
// its highest window, since an attack is a few sentences planted in an
// otherwise ordinary document.
//
// The weights are trained by untrusted/internal/train from the train
// split of untrusted/testdata/scaneval and the extra documents in
// untrusted/testdata/scantrain, and embedded here as weights.bin (see
// Decode for its layout). Retrain with
//
//	go run ./untrusted/internal/train
//
// The trainer's test fails when weights.bin is not what the current data
// and code produce.
package ngram

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Feature space and windows. Changing one changes the features: retrain.
const (
	// Buckets is the size of the hashed feature space (a power of two).
	Buckets = 1 << 18
	// MinGram and MaxGram are the character n-gram lengths, in runes.
	MinGram = 3
	MaxGram = 5
	// WindowRunes is the length of a scored window, in normalised runes:
	// a few sentences, long enough to hold an attack's instruction whole.
	WindowRunes = 256
	// WindowStride is the step between windows; every span of up to
	// WindowRunes-WindowStride runes lies whole in some window.
	WindowStride = 128
	// MaxBytes is how much of a text the model reads (the start of it);
	// the rest is not scored. It bounds the work and memory of one Score.
	MaxBytes = 64 << 10
	// MaxWindows is the most windows one Score evaluates; it follows from
	// MaxBytes (a rune is at least one byte).
	MaxWindows = MaxBytes/WindowStride + 1
)

// Normalize lower-cases text, applies NFKC, removes invisible characters
// (zero-width, bidirectional controls, soft hyphens), turns Unicode tag
// characters into the ASCII they spell (text hidden that way is read),
// writes every digit as 0 and folds each whitespace run to one space, or
// one newline when the run holds one. offs[i] is the byte offset in text
// of rune i of the result; offs has one more entry, len(text). At most
// MaxBytes of text are read.
func Normalize(text string) (runes []rune, offs []int) {
	if len(text) > MaxBytes {
		cut := MaxBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut-- // not inside a rune
		}
		text = text[:cut]
	}
	runes = make([]rune, 0, len(text))
	offs = make([]int, 0, len(text)+1)
	space := rune(0) // the pending whitespace: 0, ' ' or '\n'
	var buf [utf8.UTFMax]byte
	for i, r := range text {
		switch {
		case r >= 0xE0020 && r <= 0xE007E:
			r -= 0xE0000
		case invisible(r):
			continue
		}
		if unicode.IsSpace(r) {
			if space == 0 {
				offs = append(offs, i)
				space = ' '
			}
			if r == '\n' {
				space = '\n'
			}
			continue
		}
		if space != 0 {
			runes = append(runes, space)
			space = 0
		}
		if r >= utf8.RuneSelf {
			// NFKC rune by rune: "ｉｇｎｏｒｅ" and "𝐢𝐠𝐧𝐨𝐫𝐞" read "ignore".
			n := utf8.EncodeRune(buf[:], r)
			if !norm.NFKC.IsNormal(buf[:n]) {
				for _, k := range norm.NFKC.String(string(r)) {
					runes = append(runes, fold(k))
					offs = append(offs, i)
				}
				continue
			}
		}
		runes = append(runes, fold(r))
		offs = append(offs, i)
	}
	if space != 0 {
		runes = append(runes, space)
	}
	offs = append(offs, len(text))
	return runes, offs
}

// fold lower-cases r and writes digits as 0.
func fold(r rune) rune {
	switch {
	case r >= 'A' && r <= 'Z':
		return r + 'a' - 'A'
	case r >= '0' && r <= '9':
		return '0'
	case r < utf8.RuneSelf:
		return r
	case unicode.IsDigit(r):
		return '0'
	}
	return unicode.ToLower(r)
}

// invisible reports the characters Normalize drops.
func invisible(r rune) bool {
	return r == 0x200B || r == 0x200C || r == 0x200D || r == 0x2060 || r == 0xFEFF || r == 0x180E || r == 0x00AD ||
		r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r >= 0xE0000 && r <= 0xE007F || r == utf8.RuneError
}

// Hashing: FNV-1a over runes, then a finaliser so that the low bits used
// for the bucket are well mixed. Each kind of feature has its own seed.
const (
	fnvOffset  = 2166136261
	fnvPrime   = 16777619
	seedChar   = 0x9e3779b9
	seedWord   = 0x85ebca6b
	seedBigram = 0xc2b2ae35
)

func mix(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x7feb352d
	h ^= h >> 15
	h *= 0x846ca68b
	h ^= h >> 16
	return h
}

func bucket(h uint32) int32 { return int32(mix(h) & (Buckets - 1)) }

// Features calls emit for every feature of runes, in order of the rune
// index at which the feature ends: the character n-grams of MinGram to
// MaxGram runes ending there, then the word unigram and bigram of a word
// ending there. A word is a run of letters and digits.
func Features(runes []rune, emit func(end int, bucket int32)) {
	wordStart := -1
	var prevWord uint32
	havePrev := false
	for i, r := range runes {
		for n := MinGram; n <= MaxGram && n <= i+1; n++ {
			h := uint32(fnvOffset) ^ seedChar ^ uint32(n)
			for _, c := range runes[i-n+1 : i+1] {
				h = (h ^ uint32(c)) * fnvPrime
			}
			emit(i, bucket(h))
		}
		if !wordy(r) {
			continue
		}
		if wordStart < 0 {
			wordStart = i
		}
		if i+1 < len(runes) && wordy(runes[i+1]) {
			continue
		}
		h := uint32(fnvOffset)
		for _, c := range runes[wordStart : i+1] {
			h = (h ^ uint32(c)) * fnvPrime
		}
		emit(i, bucket(h^seedWord))
		if havePrev {
			emit(i, bucket(prevWord*31^h^seedBigram))
		}
		prevWord, havePrev, wordStart = h, true, -1
	}
}

func wordy(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// Windows returns the [start, end) rune spans scored in a text of n
// runes: every WindowStride runes, the last one ending at n; a text
// shorter than a window is one window.
func Windows(n int) [][2]int {
	if n <= WindowRunes {
		return [][2]int{{0, n}}
	}
	var out [][2]int
	for s := 0; ; s += WindowStride {
		if s+WindowRunes >= n {
			out = append(out, [2]int{n - WindowRunes, n})
			return out
		}
		out = append(out, [2]int{s, s + WindowRunes})
	}
}
