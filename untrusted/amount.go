package untrusted

import (
	"regexp"
	"strings"
)

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

// amountRe finds amounts of money: a number next to a currency sign or
// code, or shortly after a word that introduces one ("Total due: 1,500").
// The number is the first non-empty group of 1, 2 and 3.
var amountRe = regexp.MustCompile(`(?i)` +
	`(?:[$€£¥₹]|\b(?:usd|eur|gbp|chf|jpy|cad|aud|inr|cny|sek|nok|dkk|pln|czk|brl|mxn)\b) ?(\d(?:[\d,.']{0,24}\d)?)` +
	`|(\d(?:[\d,.']{0,24}\d)?) ?(?:[$€£¥₹]|\b(?:usd|eur|gbp|chf|jpy|cad|aud|inr|cny|sek|nok|dkk|pln|czk|brl|mxn|dollars?|euros?|pounds?)\b)` +
	`|\b(?:amount|total|due|balance|pay|payment|price|sum|fee|cost|charge|transfer|refund)\b[^0-9\n]{0,24}?(\d(?:[\d,.']{0,24}\d)?)`)

// amounts returns the amounts in text, each as amountPrefix and its
// canonical number (see canonAmount).
func amounts(text string) []string {
	var out []string
	for _, m := range amountRe.FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			if g == "" {
				continue
			}
			if c, ok := canonAmount(g); ok {
				out = append(out, amountPrefix+c)
			}
			break
		}
	}
	return out
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
