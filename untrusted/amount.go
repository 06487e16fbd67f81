package untrusted

import "strings"

// amountPrefix marks an amount among a session's values, so that "1500"
// the amount is never the digit run "1500" of a path or an id.
const amountPrefix = "amount:"

// amountFields are the argument names whose values are amounts of money:
// a payment whose amount reached the session only through untrusted
// content (an invoice, a page) asks, as a destination does. A key
// matches when any of its words (split at _, - and .) is one of these,
// case-insensitively: "amount_eur", "total_due".
var amountFields = map[string]bool{
	"amount": true, "total": true, "sum": true, "price": true, "cost": true, "fee": true,
	"charge": true, "subtotal": true, "cents": true,
}

// An amount of money is a number next to a currency sign or code, or
// shortly after a word that introduces one ("Total due: 1,500"). amounts
// finds the numbers by hand rather than with one regular expression over
// the whole text: every untrusted result is read, and most of its numbers
// (line numbers, versions, dates) are not amounts, so each is judged by a
// look at its neighbours only.
var (
	currencyCodes = wordSet("usd eur gbp chf jpy cad aud inr cny sek nok dkk pln czk brl mxn")
	currencyWords = wordSet("dollar dollars euro euros pound pounds")
	amountWords   = wordSet("amount total due balance pay payment price sum fee cost charge transfer refund")
)

// Bounds of the look around a number.
const (
	maxAmountDigits = 26 // bytes of one number, separators included
	amountLookBack  = 24 // bytes between an introducing word and its number
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// amounts returns the amounts in text, each as amountPrefix and its
// canonical number (see canonAmount).
func amounts(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) || i > 0 && (isAlnum(text[i-1])) {
			continue
		}
		j := i + 1
		for j < len(text) && j-i < maxAmountDigits && (isDigit(text[j]) || text[j] == ',' || text[j] == '.' || text[j] == '\'') {
			j++
		}
		for !isDigit(text[j-1]) {
			j--
		}
		num := text[i:j]
		if j < len(text) && isAlnum(text[j]) && !currencyAfter(text[j:]) {
			i = j // part of a word or a longer number: not an amount
			continue
		}
		if currencyBefore(text[:i]) || currencyAfter(text[j:]) || introducedBefore(text[:i]) {
			if c, ok := canonAmount(num); ok {
				out = append(out, amountPrefix+c)
			}
		}
		i = j
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// currencySigns are the signs written next to an amount.
var currencySigns = []string{"$", "€", "£", "¥", "₹"}

// currencyBefore reports whether before ends with a currency sign or
// code, and at most one space.
func currencyBefore(before string) bool {
	before = strings.TrimSuffix(before, " ")
	for _, sign := range currencySigns {
		if strings.HasSuffix(before, sign) {
			return true
		}
	}
	return currencyCodes[strings.ToLower(lastWord(before))]
}

// currencyAfter reports whether after starts with at most one space and
// a currency sign, code or word.
func currencyAfter(after string) bool {
	after = strings.TrimPrefix(after, " ")
	for _, sign := range currencySigns {
		if strings.HasPrefix(after, sign) {
			return true
		}
	}
	w := strings.ToLower(firstWord(after))
	return currencyCodes[w] || currencyWords[w]
}

// introducedBefore reports whether a word that introduces an amount
// stands shortly before, on the same line and with no other number
// between.
func introducedBefore(before string) bool {
	k := len(before)
	for k > 0 && len(before)-k < amountLookBack && before[k-1] != '\n' && !isDigit(before[k-1]) {
		k--
	}
	for _, w := range strings.FieldsFunc(before[k:], func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }) {
		if amountWords[strings.ToLower(w)] {
			return true
		}
	}
	return false
}

// lastWord returns the letters that s ends with.
func lastWord(s string) string {
	k := len(s)
	for k > 0 && k > len(s)-8 && (s[k-1] >= 'a' && s[k-1] <= 'z' || s[k-1] >= 'A' && s[k-1] <= 'Z') {
		k--
	}
	if k > 0 && isAlnum(s[k-1]) {
		return "" // the end of a longer word
	}
	return s[k:]
}

// firstWord returns the letters that s starts with.
func firstWord(s string) string {
	k := 0
	for k < len(s) && k < 8 && (s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z') {
		k++
	}
	if k < len(s) && isAlnum(s[k]) {
		return ""
	}
	return s[:k]
}

// canonAmount writes an amount one way: digits, then a dot and the
// fraction without trailing zeros when it has one ("1,500.00", "1.500,00",
// "1'500" and "1500" are all "1500"; "12,5" is "12.5"). Of a comma and a
// dot the last is the decimal mark; a lone comma or dot is one when it
// has other than three digits after it. ok is false for what is not a
// number.
func canonAmount(s string) (string, bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimLeft(s, "$€£¥₹ ")
	if s == "" || len(s) > 40 {
		return "", false
	}
	s = strings.ReplaceAll(s, "'", "")
	dec := -1
	lastComma, lastDot := strings.LastIndexByte(s, ','), strings.LastIndexByte(s, '.')
	switch {
	case lastComma >= 0 && lastDot >= 0:
		dec = max(lastComma, lastDot)
	case lastComma >= 0 && strings.Count(s, ",") == 1 && len(s)-lastComma-1 != 3:
		dec = lastComma
	case lastDot >= 0 && strings.Count(s, ".") == 1 && len(s)-lastDot-1 != 3:
		dec = lastDot
	case lastDot >= 0 && strings.Count(s, ".") == 1 && strings.Count(s, ",") == 0 && len(s)-lastDot-1 == 3 && lastDot > 3:
		dec = lastDot // "1234.567" is not a thousands group
	}
	var whole, frac strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if dec >= 0 && i > dec {
				frac.WriteByte(c)
			} else {
				whole.WriteByte(c)
			}
		case c == ',' || c == '.':
			// a separator, kept only as the decimal mark
		default:
			return "", false
		}
	}
	w := strings.TrimLeft(whole.String(), "0")
	if w == "" {
		w = "0"
	}
	f := strings.TrimRight(frac.String(), "0")
	if f == "" {
		return w, true
	}
	return w + "." + f, true
}
