package redact

// The numeric personal-data classes (card-number, ssn, phone) have no
// keyword, so one byte loop finds runs of digits and separators and checks
// each: Luhn and issuer prefixes for cards, area/group/serial for SSNs,
// fixed formats for phone numbers. Dates, versions, IP addresses, times and
// plain counts have other shapes and do not match.

// MaxNumericRunBytes bounds the bytes of one digit-and-separator run examined.
const MaxNumericRunBytes = 40

// numSep reports whether b may sit between the digit groups of a number.
func numSep(b byte) bool { return b == ' ' || b == '-' || b == '.' || b == '(' || b == ')' || b == '+' }

// scanNumeric calls fn for every card number, SSN and phone number.
func scanNumeric(text []byte, fn func(kind string, start, end int)) {
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !isDigit(c) && c != '+' && c != '(' {
			continue
		}
		if i > 0 {
			p := text[i-1]
			if isAlnum(p) || p == '.' || p == '-' || p == '_' || p == '/' || p == '+' || p == '(' || p == '\\' || p == '#' || p == '$' || p == ',' || p >= 0x80 {
				// Inside a longer token: skip to its end.
				for i < len(text) && (isAlnum(text[i]) || numSep(text[i])) {
					i++
				}
				continue
			}
		}
		// The run: digits with single separators between them.
		j, digits := i, 0
		for j < len(text) && j-i < MaxNumericRunBytes {
			b := text[j]
			if isDigit(b) {
				digits++
				j++
				continue
			}
			if numSep(b) && j+1 < len(text) && (isDigit(text[j+1]) || text[j+1] == '(' || b == ')' && text[j+1] == ' ') {
				j++
				continue
			}
			break
		}
		end := j
		for end > i && !isDigit(text[end-1]) {
			end--
		}
		// The run must end at a boundary, not inside a word or a longer number.
		if end < len(text) && end == j && (isAlnum(text[end]) || text[end] == '_') {
			for i < len(text) && (isAlnum(text[i]) || numSep(text[i])) {
				i++
			}
			continue
		}
		if digits >= 9 && end-i >= 9 {
			classifyRun(text[i:end], i, fn)
		}
		i = max(i, j-1)
	}
}

// classifyRun tries the whole run, then ever shorter runs of its digit
// groups from the left, so "2024-01-05 4111 1111 1111 1111" still yields
// the card.
func classifyRun(run []byte, base int, fn func(kind string, start, end int)) {
	// Group boundaries: offsets where a group of digits starts.
	var starts []int
	for k := 0; k < len(run); k++ {
		if isDigit(run[k]) && (k == 0 || !isDigit(run[k-1])) {
			s := k
			if s > 0 && (run[s-1] == '(' || run[s-1] == '+') {
				s--
			}
			starts = append(starts, s)
		}
	}
	if len(starts) > 0 && (run[0] == '+' || run[0] == '(') {
		starts[0] = 0
	}
	g := 0
	for g < len(starts) {
		matched := false
		for e := len(run); e > starts[g]; {
			seg := run[starts[g]:e]
			if kind := classify(seg); kind != "" {
				fn(kind, base+starts[g], base+e)
				matched = true
				for g < len(starts) && starts[g] < e {
					g++
				}
				break
			}
			// Shrink to the end of the previous group.
			k := e - 1
			for k > starts[g] && isDigit(run[k-1]) {
				k--
			}
			for k > starts[g] && !isDigit(run[k-1]) {
				k--
			}
			e = k
		}
		if !matched {
			g++
		}
	}
}

// classify names a run that is exactly one number of a known shape.
func classify(s []byte) string {
	// Fixed arrays: a run is at most MaxNumericRunBytes, and this runs
	// for every long digit run in the text.
	var ds, sepBuf [MaxNumericRunBytes]byte
	var groupBuf [MaxNumericRunBytes + 1]int
	n := 0
	seps := sepBuf[:0]
	groups := append(groupBuf[:0], 0)
	for _, b := range s {
		if isDigit(b) {
			ds[n] = b
			n++
			groups[len(groups)-1]++
		} else {
			seps = append(seps, b)
			if groups[len(groups)-1] > 0 {
				groups = append(groups, 0)
			}
		}
	}
	d := ds[:n]
	if isSSN(s, d) {
		return "ssn"
	}
	if isCard(d, seps, groups) {
		return "card-number"
	}
	if isPhone(s, d, groups) {
		return "phone"
	}
	return ""
}

func isSSN(s, d []byte) bool {
	if len(s) != 11 || s[3] != '-' || s[6] != '-' || len(d) != 9 {
		return false
	}
	area := string(d[:3])
	return area != "000" && area != "666" && d[0] != '9' && string(d[3:5]) != "00" && string(d[5:]) != "0000"
}

// maxBareCardDigits is the longest card number read without separators:
// 17 to 19 digits in one run are far more often 64-bit integers (tables of
// constants, ids) than the rare long card, which is printed grouped.
const maxBareCardDigits = 16

func isCard(d, seps []byte, groups []int) bool {
	if len(d) < 13 || len(d) > 19 || len(seps) == 0 && len(d) > maxBareCardDigits {
		return false
	}
	for _, c := range seps {
		if c != ' ' && c != '-' || c != seps[0] {
			return false // cards are written with one kind of separator, spaces or dashes
		}
	}
	if len(seps) > 0 {
		ok := false
		switch {
		case len(groups) >= 3 && groups[0] == 4 && allFours(groups[:len(groups)-1]) && groups[len(groups)-1] <= 4:
			ok = true
		case len(groups) == 3 && groups[0] == 4 && groups[1] == 6 && (groups[2] == 5 || groups[2] == 4):
			ok = true // American Express and Diners
		}
		if !ok {
			return false
		}
	}
	p2 := int(d[0]-'0')*10 + int(d[1]-'0')
	p4 := p2*100 + int(d[2]-'0')*10 + int(d[3]-'0')
	n := len(d)
	// Each issuer's prefixes and the lengths it issues: a 15-digit run
	// that starts with 4 is no Visa (math tables are full of them).
	switch {
	case d[0] == '4': // Visa
		if n != 13 && n != 16 && n != 19 {
			return false
		}
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		if n != 16 {
			return false
		}
	case p2 == 34 || p2 == 37: // American Express
		if n != 15 {
			return false
		}
	case p4 == 6011 || p2 == 65 || p4/10 >= 644 && p4/10 <= 649, p2 == 35, p2 == 62: // Discover, JCB, UnionPay
		if n < 16 {
			return false
		}
	case p2 == 36 || p2 == 38 || p2 == 30: // Diners
		if n < 14 {
			return false
		}
	default:
		return false
	}
	return luhn(d)
}

func allFours(gs []int) bool {
	for _, g := range gs {
		if g != 4 {
			return false
		}
	}
	return true
}

// luhn reports whether the digits pass the Luhn checksum.
func luhn(d []byte) bool {
	sum := 0
	for i := range d {
		v := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// isPhone accepts E.164 (+ and 8 to 15 digits, grouped any way) and the
// North American forms (555) 123-4567, 555-123-4567, 555.123.4567 and
// 555 123 4567.
func isPhone(s, d []byte, groups []int) bool {
	if s[0] == '+' {
		return len(d) >= 8 && len(d) <= 15 && len(groups) >= 2
	}
	if len(d) != 10 || len(groups) != 3 || groups[0] != 3 || groups[1] != 3 || groups[2] != 4 || d[0] < '2' {
		return false
	}
	if s[0] == '(' {
		return s[4] == ')' && (s[5] == ' ' || s[5] == '-' || isDigit(s[5]))
	}
	sep := s[3]
	return s[7] == sep && (sep == '-' || sep == '.' || sep == ' ')
}
