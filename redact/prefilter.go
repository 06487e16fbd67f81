package redact

// prefilter finds every occurrence of every rule keyword in one pass over
// the text, ASCII case folded: an Aho-Corasick automaton compiled to a dense
// transition table, so the scan costs two table loads per byte however many
// keywords the rules add. The table has a column per byte class, not per
// byte: all bytes that occur in no keyword share class 0, and upper case
// shares its lower-case letter's class, so the table stays small enough to
// stay in cache as keywords are added (about 50 classes instead of 256).
// It is written here rather than taken from a library because it is about
// a hundred lines, the dense form is what makes it fast, and no module in
// go.mod already provides one.
type prefilter struct {
	// class maps a byte to its column; nclass is the number of columns.
	class  [256]uint8
	nclass int
	// next[s+class[b]] is the state after reading byte b in state s, with
	// failure links already folded in. A state is kept as the offset of
	// its row (its number times nclass), negated when some keyword ends
	// in it, so the scan needs no multiply and no second table to see a
	// hit.
	next []int32
	// out[s] lists the keywords (indexes into words) that end in state s,
	// including those reached through failure links.
	out   [][]int32
	words []string // lower-cased keywords
}

// fold maps ASCII upper case to lower case and leaves every other byte.
var fold = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if i >= 'A' && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

func newPrefilter(words []string) *prefilter {
	p := &prefilter{words: words}
	// Byte classes: 0 for every byte in no keyword, then one per folded
	// byte that some keyword holds.
	p.nclass = 1
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			if b := fold[w[i]]; p.class[b] == 0 {
				p.class[b] = uint8(p.nclass)
				p.nclass++
			}
		}
	}
	for b := 'A'; b <= 'Z'; b++ {
		p.class[b] = p.class[fold[b]]
	}
	nc := p.nclass
	// The trie, as sparse maps first.
	type node struct {
		child map[int]int32 // by class
		out   []int32
	}
	nodes := []node{{child: map[int]int32{}}}
	for wi, w := range words {
		s := int32(0)
		for i := 0; i < len(w); i++ {
			c := int(p.class[w[i]])
			n, ok := nodes[s].child[c]
			if !ok {
				n = int32(len(nodes))
				nodes = append(nodes, node{child: map[int]int32{}})
				nodes[s].child[c] = n
			}
			s = n
		}
		nodes[s].out = append(nodes[s].out, int32(wi))
	}
	// Breadth first: each state's transitions are its children, else its
	// failure state's transitions, which are already complete.
	p.next = make([]int32, len(nodes)*nc)
	p.out = make([][]int32, len(nodes))
	fail := make([]int32, len(nodes))
	queue := []int32{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		p.out[s] = append(append([]int32(nil), nodes[s].out...), p.out[fail[s]]...)
		if s == 0 {
			p.out[s] = nodes[s].out
		}
		for c := 0; c < nc; c++ {
			n, ok := nodes[s].child[c]
			switch {
			case ok:
				if s == 0 {
					fail[n] = 0
				} else {
					fail[n] = p.next[int(fail[s])*nc+c]
				}
				p.next[int(s)*nc+c] = n
				queue = append(queue, n)
			case s == 0:
				p.next[c] = 0
			default:
				p.next[int(s)*nc+c] = p.next[int(fail[s])*nc+c]
			}
		}
	}
	for i, t := range p.next {
		p.next[i] = t * int32(nc)
		if len(p.out[t]) > 0 {
			p.next[i] = -p.next[i]
		}
	}
	return p
}

// hit is one keyword occurrence: the keyword's index and its start offset.
type hit struct {
	word  int32
	start int
}

// find calls fn for every keyword occurrence in text, in order of their end.
func (p *prefilter) find(text []byte, fn func(h hit)) {
	s := int32(0)
	next, out, words, class, nc := p.next, p.out, p.words, &p.class, int32(p.nclass)
	for i := 0; i < len(text); i++ {
		s = next[s+int32(class[text[i]])]
		if s < 0 {
			s = -s
			for _, w := range out[s/nc] {
				fn(hit{word: w, start: i + 1 - len(words[w])})
			}
		}
	}
}
