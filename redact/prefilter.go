package redact

// prefilter finds every occurrence of every rule keyword in one pass over
// the text, ASCII case folded: an Aho-Corasick automaton compiled to a dense
// transition table, so the scan costs one table load per byte however many
// keywords the rules add. It is written here rather than taken from a
// library because it is about eighty lines, the dense form is what makes it
// fast, and no module in go.mod already provides one.
type prefilter struct {
	// next[s*256+b] is the state after reading byte b in state s, with
	// failure links already folded in.
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
	// The trie, as sparse maps first.
	type node struct {
		child map[byte]int32
		out   []int32
	}
	nodes := []node{{child: map[byte]int32{}}}
	for wi, w := range words {
		s := int32(0)
		for i := 0; i < len(w); i++ {
			b := fold[w[i]]
			n, ok := nodes[s].child[b]
			if !ok {
				n = int32(len(nodes))
				nodes = append(nodes, node{child: map[byte]int32{}})
				nodes[s].child[b] = n
			}
			s = n
		}
		nodes[s].out = append(nodes[s].out, int32(wi))
	}
	// Breadth first: each state's transitions are its children, else its
	// failure state's transitions, which are already complete.
	p.next = make([]int32, len(nodes)*256)
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
		for b := 0; b < 256; b++ {
			n, ok := nodes[s].child[byte(b)]
			switch {
			case ok:
				if s == 0 {
					fail[n] = 0
				} else {
					fail[n] = p.next[int(fail[s])*256+b]
				}
				p.next[int(s)*256+b] = n
				queue = append(queue, n)
			case s == 0:
				p.next[b] = 0
			default:
				p.next[int(s)*256+b] = p.next[int(fail[s])*256+b]
			}
		}
	}
	// Upper-case bytes move like their lower-case forms.
	for s := 0; s < len(nodes); s++ {
		for b := 'A'; b <= 'Z'; b++ {
			p.next[s*256+int(b)] = p.next[s*256+int(fold[b])]
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
	next, out, words := p.next, p.out, p.words
	for i := 0; i < len(text); i++ {
		s = next[int(s)<<8|int(text[i])]
		if o := out[s]; len(o) > 0 {
			for _, w := range o {
				fn(hit{word: w, start: i + 1 - len(words[w])})
			}
		}
	}
}
