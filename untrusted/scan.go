package untrusted

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"airlock.dev/airlock/untrusted/internal/ngram"
)

// Scan limits and the default threshold. A zero Options field takes its
// default.
const (
	// DefaultThreshold is the score at or above which a report is Flagged.
	DefaultThreshold = 0.5
	// DefaultMaxScanBytes is how much of a text Scan reads; the rest is
	// not scanned and the report says Truncated.
	DefaultMaxScanBytes = 256 << 10
	// DefaultMaxDecoded is how many encoded candidates (base64, hex) one
	// Scan decodes and rescans, over all depths.
	DefaultMaxDecoded = 32
	// DefaultMaxDepth is how many layers of encoding Scan looks through
	// (base64 inside base64 is depth 2).
	DefaultMaxDepth = 2
	// DefaultMaxSignals is how many signals one Scan collects; past it the
	// scan stops (the score is saturated long before) and says Truncated.
	DefaultMaxSignals = 256
	// MinEncodedBytes is the shortest run Scan tries to decode.
	MinEncodedBytes = 24
	// MaxEncodedBytes is the longest run Scan decodes; a longer one is
	// decoded in its first MaxEncodedBytes.
	MaxEncodedBytes = 64 << 10
)

// Signal names, stable: callers and the audit log branch on them.
const (
	SignalInstructionOverride     = "instruction_override"     // "ignore previous instructions", in many languages
	SignalRoleSpoofing            = "role_spoofing"            // "you are now", "developer mode", "this is the system"
	SignalTurnSpoofing            = "turn_spoofing"            // a line starting "Human:", "Assistant:", "System:"
	SignalChatTemplate            = "chat_template"            // <|im_start|>, [INST], <<SYS>>, <|system|> ...
	SignalEnvelopeClosing         = "envelope_closing"         // </untrusted...> inside untrusted text
	SignalTagClosing              = "tag_closing"              // </tool_result>, </system>, </document> ...
	SignalToolCallInstruction     = "tool_call_instruction"    // "call the X tool", "run the following command"
	SignalExfiltrationInstruction = "exfiltration_instruction" // "send the contents to", "post to http", "reveal your system prompt"
	SignalMarkdownImageExfil      = "markdown_image_exfil"     // ![](https://host/?q=...) and <img src=...?...>
	SignalLinkExfil               = "link_exfil"               // [text](https://host/?data={...}) with a template or secret-named parameter
	SignalHiddenText              = "hidden_text"              // HTML comments or CSS-hidden text with instructions, tag characters, zero-width runs, bidi controls
	SignalEncodedPayload          = "encoded_payload"          // base64, hex, rot13 or reversed text that holds instructions
	SignalAddressedToModel        = "addressed_to_model"       // "Note to the AI assistant:", "if you are an AI", "agents reading this", in many languages
	SignalTaskHijack              = "task_hijack"              // "instead of summarizing", "your real task is", "do not answer the user's question"
	SignalPersuasion              = "persuasion"               // claimed authority or permission: "I authorize you", "you are required to", "pre-approved"
	SignalCovertAction            = "covert_action"            // "do not mention this", "without asking", "skip the approval"
	SignalRiskyAction             = "risky_action"             // "tell the user that", curl | sh, send to an address, approve and merge
	SignalModel                   = "model"                    // the n-gram model's probability, over its best window (see ScanWith)
)

// Options tune Scan. A nil *Options, and every zero field, means the
// default.
type Options struct {
	Threshold    float64 `yaml:"threshold" json:"threshold,omitempty"`
	MaxScanBytes int     `yaml:"max_scan_bytes" json:"max_scan_bytes,omitempty"`
	MaxDecoded   int     `yaml:"max_decoded" json:"max_decoded,omitempty"`
	MaxDepth     int     `yaml:"max_depth" json:"max_depth,omitempty"`
	MaxSignals   int     `yaml:"max_signals" json:"max_signals,omitempty"`
	// RulesOnly leaves the n-gram model out: the score is the rules'
	// alone, as before the model (for comparison and for callers that
	// want only explainable signals).
	RulesOnly bool `yaml:"rules_only" json:"rules_only,omitempty"`
}

// Signal is one piece of evidence: its name, its byte span in the scanned
// text, and the weight it adds. Detail says more where it helps ("in an
// HTML comment", "base64"); it never quotes the text.
type Signal struct {
	Name   string  `json:"name"`
	Start  int     `json:"start"`
	End    int     `json:"end"`
	Weight float64 `json:"weight"`
	Detail string  `json:"detail,omitempty"`
}

// Report is what Scan found. Score is in [0, 1]: the rules' signals'
// weights combined as independent evidence (1 - Π(1 - w), strongest
// weight per name), or the model signal's weight when that is higher.
// Flagged is Score >= the threshold.
type Report struct {
	Score     float64  `json:"score"`
	Flagged   bool     `json:"flagged"`
	Signals   []Signal `json:"signals"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Names lists the report's signal names, sorted, once each.
func (r Report) Names() []string {
	var names []string
	for _, s := range r.Signals {
		if !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Scan scores text with the default options.
func Scan(text string) Report {
	r, _ := ScanWith(text, nil)
	return r
}

// ScanWith scores text. It fails only on bad options.
func ScanWith(text string, opts *Options) (Report, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Threshold < 0 || o.Threshold > 1 || o.MaxScanBytes < 0 || o.MaxDecoded < 0 || o.MaxDepth < 0 || o.MaxSignals < 0 {
		return Report{}, errorf(CodeInvalidOption, "Use a threshold from 0 to 1 and limits of 0 (default) or more", "scan options out of range: %+v", o)
	}
	if o.Threshold == 0 {
		o.Threshold = DefaultThreshold
	}
	if o.MaxScanBytes == 0 {
		o.MaxScanBytes = DefaultMaxScanBytes
	}
	if o.MaxDecoded == 0 {
		o.MaxDecoded = DefaultMaxDecoded
	}
	if o.MaxDepth == 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxSignals == 0 {
		o.MaxSignals = DefaultMaxSignals
	}
	var rep Report
	if len(text) > o.MaxScanBytes {
		// Cut before the rune that would be split: text[cut] is the
		// first byte left out, so back up to a rune's first byte.
		cut := o.MaxScanBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
		rep.Truncated = true
	}
	s := &scanner{budget: o.MaxDecoded, maxDepth: o.MaxDepth, maxSignals: o.MaxSignals}
	rep.Signals = s.scan(text, 0, 0)
	if s.signals >= s.maxSignals {
		rep.Truncated = true
		rep.Signals = rep.Signals[:min(len(rep.Signals), s.maxSignals)]
	}
	// A span found twice (as written and in a normalized copy) is one
	// finding.
	type span struct {
		name, detail string
		start, end   int
	}
	seen := make(map[span]bool, len(rep.Signals))
	rep.Signals = slices.DeleteFunc(rep.Signals, func(sig Signal) bool {
		k := span{sig.Name, sig.Detail, sig.Start, sig.End}
		dup := seen[k]
		seen[k] = true
		return dup
	})
	best := map[string]float64{}
	for _, sig := range rep.Signals {
		best[sig.Name] = max(best[sig.Name], sig.Weight)
	}
	keep := 1.0
	for _, w := range best {
		keep *= 1 - w
	}
	rep.Score = math.Round((1-keep)*1000) / 1000
	if m := ngram.Embedded(); m != nil && !o.RulesOnly {
		// The model is a second opinion beside the rules, not another
		// piece of evidence to multiply with theirs: its probability is
		// calibrated (0.5 at the threshold chosen on the held-out split),
		// and it decides alone when it reaches the scan's threshold.
		if res := m.Score(text); res.Prob >= o.Threshold {
			w := max(math.Round(res.Prob*1000)/1000, 0.001)
			rep.Signals = append(rep.Signals, Signal{Name: SignalModel, Start: res.Start, End: res.End, Weight: w, Detail: "n-gram model, best window"})
			rep.Score = max(rep.Score, w)
		}
	}
	slices.SortStableFunc(rep.Signals, func(a, b Signal) int { return a.Start - b.Start })
	rep.Flagged = rep.Score >= o.Threshold
	if rep.Signals == nil {
		rep.Signals = []Signal{}
	}
	return rep, nil
}

// phrase is a compiled pattern for one signal.
type phrase struct {
	name   string
	re     *regexp.Regexp
	weight float64
	detail string
	// check, if set, must accept the match: for image and link phrases,
	// that the URL's query carries data rather than a badge's style=flat.
	check func(match string) bool
	// need and nonASCII are the prefilter; see p.
	need     [][]string
	nonASCII bool
	// backup marks a costly phrase that only widens an earlier one of
	// the same name (other languages' overrides after English's): it is
	// not run on a chunk where that name has matched already.
	backup bool
	// lower marks an expression compiled without (?i) that runs on the
	// chunk with its ASCII letters lower-cased: the same matches, without
	// the cost of case folding at every step (see p).
	lower bool
}

// find returns the phrase's matches in chunk; lower is chunk with its
// ASCII letters lower-cased (same offsets).
func (ph *phrase) find(chunk, lower string, n int) [][]int {
	if ph.lower {
		return ph.re.FindAllStringIndex(lower, n)
	}
	return ph.re.FindAllStringIndex(chunk, n)
}

// foldable reports whether a case-insensitive expression matches the
// same on ASCII-lower-cased text without its (?i): it has no upper-case
// ASCII letter outside an escape (\S, \p{..}), and no cased letter
// beyond ASCII ("önceki" must still match "Önceki").
func foldable(re string) bool {
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\':
			i++
			if i+1 < len(re) && (re[i] == 'p' || re[i] == 'P') && re[i+1] == '{' {
				if j := strings.IndexByte(re[i:], '}'); j > 0 {
					i += j
				}
			}
		case c >= 'A' && c <= 'Z':
			return false
		case c >= 0x80:
			r, size := utf8.DecodeRuneInString(re[i:])
			if unicode.IsUpper(r) || unicode.IsLower(r) {
				return false
			}
			i += size - 1
		}
	}
	return true
}

// p compiles a phrase. need is its prefilter: groups joined by " & ",
// each a list of alternatives joined by "|"; a chunk of text is matched
// only if, ASCII lower-cased, it holds one alternative of every group.
// need "*" means the phrase is in a non-Latin script and runs only on
// chunks with non-ASCII text; "* & ..." adds groups to that.
func p(name string, weight float64, detail, need, re string) phrase {
	ph := phrase{name: name, weight: weight, detail: detail}
	if rest, ok := strings.CutPrefix(re, "(?i)"); ok && foldable(rest) {
		re, ph.lower = rest, true
	}
	ph.re = regexp.MustCompile(re)
	if need == "*" {
		ph.nonASCII = true
		return ph
	}
	if rest, ok := strings.CutPrefix(need, "* & "); ok {
		ph.nonASCII, need = true, rest
	}
	for _, g := range strings.Split(need, " & ") {
		ph.need = append(ph.need, strings.Split(g, "|"))
	}
	return ph
}

// wanted reports whether the phrase may match in a chunk, by its
// prefilter: a superset test, the regular expression decides.
func (ph *phrase) wanted(c *chunkIndex) bool {
	if ph.nonASCII && !c.nonASCII || ph.nonASCII && ph.need == nil {
		return ph.nonASCII && c.nonASCII
	}
	for _, g := range ph.need {
		ok := false
		for _, a := range g {
			if c.has(a) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// chunkIndex answers "does the chunk hold this anchor" in one map lookup
// for word anchors: it holds the first four letters of every ASCII word
// of the chunk (and whole words shorter than that), lower-cased. Anchors
// with other characters ("<|", "](") are looked for in the text itself.
type chunkIndex struct {
	lower    string
	words    map[string]bool
	nonASCII bool
}

func indexChunk(chunk string) *chunkIndex {
	lower, non := asciiLower(chunk)
	c := &chunkIndex{lower: lower, words: map[string]bool{}, nonASCII: non}
	for i := 0; i < len(lower); {
		if !isLetter(lower[i]) {
			i++
			continue
		}
		j := i
		for j < len(lower) && isLetter(lower[j]) {
			j++
		}
		c.words[lower[i:min(j, i+4)]] = true
		i = j
	}
	return c
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' }

func (c *chunkIndex) has(anchor string) bool {
	word := true
	for i := 0; i < len(anchor); i++ {
		if !isLetter(anchor[i]) {
			word = false
			break
		}
	}
	if !word {
		return strings.Contains(c.lower, anchor)
	}
	return c.words[anchor[:min(len(anchor), 4)]]
}

// hiddenPatterns find text meant to be invisible to a person.
var (
	htmlComment = regexp.MustCompile(`(?s)<!--(.*?)-->`)
	// hiddenHTML find elements a person does not see, by inline style
	// (display:none, visibility:hidden, a zero or one-pixel font, opacity
	// 0, transparent or white-on-white text, off-screen positions, a
	// zero-height box that hides its overflow), by the hidden attribute,
	// and markdown's comment idiom [//]: # (...). Group 1 is the hidden
	// content; with no instruction in it, hiding is no signal (menus,
	// preheaders, skip links).
	hiddenHTML = []*regexp.Regexp{
		regexp.MustCompile(`(?is)<[a-z][a-z0-9]*\b[^>]{0,500}\bstyle\s*=\s*["'][^"']{0,500}(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*[01](?:\.0*)?(?:px|pt|em|rem|%)?\s*(?:;|["'!])|opacity\s*:\s*0(?:\.0*)?\s*(?:;|["'!])|color\s*:\s*transparent|color\s*:\s*(?:#f[ef]f(?:[ef][ef][ef])?|white)\b[^"']{0,200}background(?:-color)?\s*:\s*(?:#fff(?:fff)?|white)\b|(?:left|top|text-indent)\s*:\s*-\d{3,}px|(?:max-)?height\s*:\s*0[^"']{0,100}overflow\s*:\s*hidden)[^"']{0,500}["'][^>]{0,500}>(.*?)</`),
		regexp.MustCompile(`(?is)<[a-z][a-z0-9]*\b[^>]{0,500}?\s(?:hidden|aria-hidden\s*=\s*["']true["'])(?:\s[^>]{0,500})?>(.*?)</`),
		regexp.MustCompile(`(?m)^\[//\]:\s*#\s*[("](.{0,1000})[)"]\s*$`),
	}
)

// scanner carries the decode budget across depths.
type scanner struct {
	budget     int
	maxDepth   int
	maxSignals int
	signals    int // signals found so far, at every depth
}

// scan finds signals in text; offsets are shifted by base so that signals
// found in decoded text point at the encoded run in the original.
func (s *scanner) scan(text string, base, depth int) []Signal {
	var sigs []Signal
	add := func(name string, start, end int, w float64, detail string) {
		if depth > 0 {
			start, end = 0, 0 // inside a decoded run, offsets are the run's
		}
		s.signals++
		sigs = append(sigs, Signal{Name: name, Start: base + start, End: base + end, Weight: w, Detail: detail})
	}

	// Invisible characters first: they are evidence themselves, and they
	// are removed before phrases are matched, so that "ig\u200bnore"
	// still reads "ignore".
	folded, offs := fold(text)
	s.invisible(text, add, depth)

	for _, c := range chunks(folded) {
		if s.signals >= s.maxSignals {
			break
		}
		chunk := folded[c[0]:c[1]]
		idx := indexChunk(chunk)
		matched := map[string]bool{}
		for i, all := 0, phrases(); i < len(all); i++ {
			ph := &all[i]
			if ph.backup && matched[ph.name] || !ph.wanted(idx) {
				continue
			}
			for _, m := range ph.find(chunk, idx.lower, MaxMatchesPerChunk) {
				if ph.check != nil && !ph.check(chunk[m[0]:m[1]]) {
					continue
				}
				s, e := c[0]+m[0], c[0]+m[1]
				w := ph.weight * discount(folded, s, e)
				if ph.name == SignalChatTemplate && mentioned(folded, s, e) {
					w *= 0.5
				}
				add(ph.name, offs[s], offs[e], w, ph.detail)
				matched[ph.name] = true
			}
		}
	}

	// Hidden HTML: comments and CSS-hidden elements whose content holds
	// instructions. A comment with ordinary text is no signal.
	for _, m := range htmlComment.FindAllStringSubmatchIndex(text, MaxHiddenElements) {
		if inner := s.phraseSignals(text[m[2]:m[3]]); inner > 0 {
			add(SignalHiddenText, m[0], m[1], 0.5, "instructions in an HTML comment")
		}
	}
	for _, re := range hiddenHTML {
		for _, m := range re.FindAllStringSubmatchIndex(text, MaxHiddenElements) {
			if m[2] >= 0 && s.phraseSignals(text[m[2]:m[3]]) > 0 {
				add(SignalHiddenText, m[0], m[1], 0.6, "instructions in hidden text")
			}
		}
	}

	if depth >= s.maxDepth {
		return sigs
	}
	// Encoded payloads: decode bounded candidates and rescan them.
	for _, m := range encodedRuns(text) {
		if s.budget <= 0 {
			break
		}
		run := text[m[0]:min(m[1], m[0]+MaxEncodedBytes)]
		dec, kind := decode(run)
		if dec == "" {
			continue
		}
		s.budget--
		inner := s.scan(dec, base+m[0], depth+1)
		if len(inner) > 0 {
			add(SignalEncodedPayload, m[0], m[1], 0.6, kind)
			if depth == 0 {
				for i := range inner {
					inner[i].Start, inner[i].End = base+m[0], base+m[1]
				}
			}
			sigs = append(sigs, inner...)
		}
	}
	// rot13: only the instruction phrases are looked for in the rotated
	// text, and only where the plain text had none.
	if depth == 0 && !hasName(sigs, SignalInstructionOverride) {
		rot := rot13(folded[:min(len(folded), Rot13Bytes)])
		rotLower, _ := asciiLower(rot)
		for _, ph := range phrases()[:4] {
			if m := ph.find(rot, rotLower, 1); m != nil {
				m := m[0]
				add(SignalEncodedPayload, offs[m[0]], offs[m[1]], 0.6, "rot13")
				add(SignalInstructionOverride, offs[m[0]], offs[m[1]], ph.weight, "rot13")
				break
			}
		}
	}
	if depth == 0 {
		sigs = append(sigs, s.transformed(folded, offs, add)...)
	}
	return sigs
}

// transformed rescans lines that read as English once rot13'd or
// reversed (".snoitcurtsni suoiverp lla erongi"), and adds
// encoded_payload where they hold instructions. A line qualifies when the
// transform gains at least MinTransformedWords common English words.
func (s *scanner) transformed(folded string, offs []int, add func(string, int, int, float64, string)) []Signal {
	var sigs []Signal
	lines := 0
	for start := 0; start < min(len(folded), Rot13Bytes) && lines < MaxTransformedLines; {
		end := strings.IndexByte(folded[start:], '\n')
		if end < 0 {
			end = len(folded)
		} else {
			end += start
		}
		line := folded[start:end]
		next := end + 1
		if len(line) < MinEncodedBytes || s.budget <= 0 {
			start = next
			continue
		}
		plain := englishWords(line)
		for _, t := range []struct {
			kind string
			text string
		}{{"rot13", rot13(line)}, {"reversed", reverse(line)}} {
			if englishWords(t.text) < plain+MinTransformedWords {
				continue
			}
			lines++
			s.budget--
			inner := s.scan(t.text, 0, 1)
			if len(inner) == 0 {
				continue
			}
			a, b := offs[start], offs[end]
			add(SignalEncodedPayload, a, b, 0.6, t.kind)
			for i := range inner {
				inner[i].Start, inner[i].End = a, b
			}
			sigs = append(sigs, inner...)
			break
		}
		start = next
	}
	return sigs
}

// commonWords are frequent English words; text that holds several of
// them only after a transform was written in that transform.
var commonWords = []string{" the ", " and ", " to ", " you ", " your ", " all ", " of ", " this ", " is ", " in ", " and ", " with ", " user ", " for "}

func englishWords(s string) int {
	lower, _ := asciiLower(" " + s + " ")
	n := 0
	for _, w := range commonWords {
		n += strings.Count(lower, w)
	}
	return n
}

// reverse reverses s rune by rune.
func reverse(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// Chunking limits for phrase matching.
const (
	// ChunkBytes is the most text one phrase search runs over: lines are
	// packed into chunks up to this size, and a longer line is cut (at a
	// space near the limit when there is one). A phrase split across a
	// cut is not seen.
	ChunkBytes = 512
	// MaxMatchesPerChunk bounds the matches of one phrase in one chunk.
	MaxMatchesPerChunk = 16
	// Rot13Bytes is how much text the rot13 check reads.
	Rot13Bytes = 64 << 10
	// QuoteBytes is how far after a phrase its closing quote may be for
	// the phrase to count as quoted (and weigh half).
	QuoteBytes = 80
	// MaxHiddenElements bounds the HTML comments and hidden elements of
	// each kind whose content is checked for instructions.
	MaxHiddenElements = 64
	// MaxTransformedLines bounds the lines that read as rot13 or reversed
	// English and are rescanned so (each also spends one of MaxDecoded).
	MaxTransformedLines = 8
	// MinTransformedWords is how many common English words a line must
	// gain by rot13 or by reversal before it is rescanned that way.
	MinTransformedWords = 2
	// MinHidingZeroWidth is how many zero-width characters set inside
	// words make hidden_text strong: text split so that a filter does not
	// see its words.
	MinHidingZeroWidth = 6
)

// chunks cuts text into spans of whole lines of at most ChunkBytes.
func chunks(text string) [][2]int {
	var out [][2]int
	start := 0
	for start < len(text) {
		end := min(len(text), start+ChunkBytes)
		if end < len(text) {
			if i := strings.LastIndexByte(text[start:end], '\n'); i > 0 {
				end = start + i + 1
			} else if i := strings.LastIndexByte(text[max(start, end-256):end], ' '); i > 0 {
				end = max(start, end-256) + i + 1
			}
			for end > start+1 && !utf8.RuneStart(text[end]) {
				end--
			}
		}
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}

// asciiLower lower-cases ASCII letters only, so offsets stay the same,
// and reports whether s has any non-ASCII byte.
func asciiLower(s string) (string, bool) {
	b := []byte(s)
	non := false
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		} else if c >= 0x80 {
			non = true
		}
	}
	return string(b), non
}

// encodedRuns finds runs of the base64 (both alphabets) and hex
// characters of at least MinEncodedBytes, with up to two '=' after.
func encodedRuns(text string) [][2]int {
	var out [][2]int
	in := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
	}
	for i := 0; i < len(text); {
		if !in(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && in(text[j]) {
			j++
		}
		end := j
		for k := 0; k < 2 && end < len(text) && text[end] == '='; k++ {
			end++
		}
		if j-i >= MinEncodedBytes {
			out = append(out, [2]int{i, end})
		}
		i = end
	}
	return out
}

// phraseSignals counts phrase matches in s, for hidden-text checks.
func (s *scanner) phraseSignals(text string) int {
	folded, _ := fold(text)
	n := 0
	for _, c := range chunks(folded) {
		if s.signals >= s.maxSignals {
			break
		}
		chunk := folded[c[0]:c[1]]
		idx := indexChunk(chunk)
		for i, all := 0, phrases(); i < len(all); i++ {
			ph := &all[i]
			if !ph.wanted(idx) {
				continue
			}
			if m := ph.find(chunk, idx.lower, 1); m != nil && (ph.check == nil || ph.check(chunk[m[0][0]:m[0][1]])) {
				n++
			}
		}
	}
	return n
}

func hasName(sigs []Signal, name string) bool {
	for _, s := range sigs {
		if s.Name == name {
			return true
		}
	}
	return false
}

// discount lowers a phrase's weight when the text is talking about the
// phrase rather than using it: quoted, or near words like "prompt
// injection", "for example", "says". An attack that is also quoted still
// counts, at half weight.
func discount(text string, start, end int) float64 {
	f := 1.0
	if quoted(text, start, end) {
		f *= 0.5
	}
	lower, _ := asciiLower(text[max(0, start-200):start])
	for _, m := range metaContext {
		if strings.Contains(lower, m) {
			f *= 0.6
			break
		}
	}
	return f
}

// quoted reports whether the phrase at start is a short quotation in
// running text: an opening quote before it on its line (a straight double
// quote that opens in prose, after a space, "(" or the line start, not a
// JSON or attribute value after ":", "=" or ","; a backtick; or a
// typographic quote) and the closing quote within QuoteBytes after end.
func quoted(text string, start, end int) bool {
	line := text[max(0, start-300):start]
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	after := text[end:min(len(text), end+QuoteBytes)]
	for _, q := range [][2]string{{"\"", "\""}, {"`", "`"}, {"“", "”"}, {"«", "»"}, {"「", "」"}} {
		i := strings.LastIndex(line, q[0])
		if i < 0 || !strings.Contains(after, q[1]) {
			continue
		}
		if q[0] == q[1] && strings.Count(line, q[0])%2 == 0 {
			continue // the last one closed a quotation
		}
		if q[0] == "\"" {
			prev := strings.TrimRight(line[:i], " ")
			if prev != line[:i] && prev != "" && strings.ContainsAny(prev[len(prev)-1:], ":=,[{") {
				continue // a value, not a quotation
			}
			if prev == line[:i] && prev != "" && !strings.HasSuffix(prev, "(") {
				continue // attached to a word: name="...", not prose
			}
		}
		return true
	}
	return false
}

// mentioned reports whether a chat-template token is written about
// rather than used: followed by "tags", "markers" or "tokens", or after
// "in", "with", "like", "as" or "the" in running text.
func mentioned(text string, start, end int) bool {
	after, _ := asciiLower(text[end:min(len(text), end+12)])
	for _, w := range []string{" tag", " marker", " token", " format", " and ", " or ", ", ", " ..."} {
		if strings.HasPrefix(after, w) {
			return true
		}
	}
	before, _ := asciiLower(text[max(0, start-8):start])
	for _, w := range []string{" in ", " with ", " like ", " as ", " the ", " and ", " or ", "... "} {
		if strings.HasSuffix(before, w) {
			return true
		}
	}
	return false
}

// metaContext are words that, shortly before a phrase, say the text is
// about injections rather than one (matched after whitespace folding).
var metaContext = []string{
	"prompt injection", "prompt-injection", "jailbreak", "injection attack", "for example", "e.g.",
	"such as", "red team", "red-team", "attackers may", "attackers can", "attacker may", "attacker can",
	"an attack", "an example", "looks like", "look like", "phrase like", "phrases like", "says", "said",
	"would say", "we tried", "researchers", "showed that", "payloads",
}

// invisible adds hidden_text for Unicode tag characters (and rescans the
// ASCII they spell), zero-width runs and bidirectional controls.
func (s *scanner) invisible(text string, add func(string, int, int, float64, string), depth int) {
	var tags strings.Builder
	tagStart, tagEnd := -1, -1
	zw, zwStart, zwEnd := 0, -1, -1
	bidi, bidiStart, bidiEnd := 0, -1, -1
	prevEmoji := false
	// inWords counts zero-width characters between two visible
	// characters, letters or spaces: text split so that a filter does not
	// see its words. pending is one seen after such a character.
	inWords, pending, prevWordy := 0, 0, false
	for i, r := range text {
		wordy := unicode.IsLetter(r) || r == ' '
		if wordy && prevWordy {
			inWords += pending
		}
		if r != 0x200B && r != 0x2060 && r != 0xFEFF {
			pending = 0
			prevWordy = wordy
		}
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			if prevEmoji && r != 0xE0001 {
				continue // emoji tag sequences (subdivision flags) use tag letters
			}
			if tagStart < 0 {
				tagStart = i
			}
			tagEnd = i + utf8.RuneLen(r)
			if r >= 0xE0020 && r <= 0xE007E {
				tags.WriteRune(r - 0xE0000)
			}
			continue
		case r == 0x200B || r == 0x2060 || r == 0x180E || r == 0xFEFF && i > 0 || (r == 0x200C || r == 0x200D) && !prevEmoji:
			if r == 0x200B || r == 0x2060 || r == 0xFEFF {
				pending++
			}
			if zwStart < 0 {
				zwStart = i
			}
			zw++
			zwEnd = i + utf8.RuneLen(r)
		case r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x061C:
			if bidiStart < 0 {
				bidiStart = i
			}
			bidi++
			bidiEnd = i + utf8.RuneLen(r)
		}
		prevEmoji = r >= 0x1F000 || r == 0x200D && prevEmoji || r == 0xFE0F
	}
	if tagStart >= 0 {
		add(SignalHiddenText, tagStart, tagEnd, 0.8, "Unicode tag characters")
		if depth < s.maxDepth && s.budget > 0 && tags.Len() > 0 {
			s.budget--
			for _, sig := range s.scan(tags.String(), 0, depth+1) {
				add(sig.Name, tagStart, tagEnd, sig.Weight, "in Unicode tag characters")
			}
		}
	}
	switch {
	case inWords >= MinHidingZeroWidth:
		add(SignalHiddenText, zwStart, zwEnd, 0.5, "zero-width characters inside words")
	case zw >= 4:
		add(SignalHiddenText, zwStart, zwEnd, 0.3, "zero-width characters")
	}
	if bidi > 0 {
		add(SignalHiddenText, bidiStart, bidiEnd, 0.4, "bidirectional control characters")
	}
}

// fold removes invisible characters, folds whitespace runs to one
// space and applies NFKC to compatibility letters (see compat); offs maps each byte of the result (and its end) to the input.
func fold(text string) (string, []int) {
	var b strings.Builder
	b.Grow(len(text))
	offs := make([]int, 0, len(text)+1)
	space := false
	for i, r := range text {
		switch {
		case r == 0x200B || r == 0x200C || r == 0x200D || r == 0x2060 || r == 0xFEFF || r == 0x180E || r == 0x00AD ||
			r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r >= 0xE0000 && r <= 0xE007F:
			continue
		case r == ' ' || r == '\t' || r == '\r' || r == 0xA0 || r == 0x3000 || r >= 0x2000 && r <= 0x200A:
			if space {
				continue
			}
			space = true
			offs = append(offs, i)
			b.WriteByte(' ')
			continue
		case compat(r):
			// NFKC, rune by rune, for the letters that have a plain
			// ASCII form: "ｉｇｎｏｒｅ", "𝐢𝐠𝐧𝐨𝐫𝐞", "ⓘⓖⓝⓞⓡⓔ" read "ignore".
			space = false
			k := norm.NFKC.String(string(r))
			b.WriteString(k)
			for range len(k) {
				offs = append(offs, i)
			}
			continue
		case r == utf8.RuneError:
			// Invalid bytes are kept as they are, one by one.
		}
		space = false
		n := utf8.RuneLen(r)
		if r == utf8.RuneError {
			n = 1
			if i+n <= len(text) {
				b.WriteByte(text[i])
				offs = append(offs, i)
				continue
			}
		}
		b.WriteString(text[i : i+n])
		for k := 0; k < n; k++ {
			offs = append(offs, i+k)
		}
	}
	offs = append(offs, len(text))
	return b.String(), offs
}

// compat reports whether r is in a block whose compatibility forms
// spell Latin letters, digits or ASCII punctuation in another look:
// fullwidth and halfwidth forms, letterlike symbols, super- and
// subscripts, enclosed alphanumerics, Latin ligatures, mathematical
// alphanumerics and enclosed alphanumeric supplement (less the flags'
// regional indicators). Only these are normalised: the rest of the text
// keeps its bytes, and scanning stays fast on CJK and emoji.
func compat(r rune) bool {
	return r >= 0xFF01 && r <= 0xFFEE || r >= 0x2100 && r <= 0x214F || r >= 0x2070 && r <= 0x209F ||
		r >= 0x2460 && r <= 0x24FF || r >= 0xFB00 && r <= 0xFB06 || r >= 0x1D400 && r <= 0x1D7FF ||
		r >= 0x1F100 && r < 0x1F1E6
}

// decode tries base64 (standard and URL alphabets) and hex on a run and
// returns the text if it decodes to mostly printable UTF-8.
func decode(run string) (string, string) {
	if len(run) >= MinEncodedBytes && len(run)%2 == 0 && isHex(run) {
		if b, err := hex.DecodeString(run); err == nil && printable(b) {
			return string(b), "hex"
		}
		return "", ""
	}
	trimmed := strings.TrimRight(run, "=")
	if len(trimmed)%4 == 1 {
		trimmed = trimmed[:len(trimmed)-1] // no base64 has this length; drop a stray byte
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(trimmed); err == nil && printable(b) {
			return string(b), "base64"
		}
	}
	return "", ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// printable reports whether b is UTF-8 text with at most one control
// character in twenty and at least some letters: random bytes are not.
func printable(b []byte) bool {
	if len(b) < 8 || !utf8.Valid(b) {
		return false
	}
	ctrl, letters := 0, 0
	for _, r := range string(b) {
		switch {
		case r < ' ' && r != '\n' && r != '\t' && r != '\r' || r == 0x7f:
			ctrl++
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f:
			letters++
		}
	}
	return ctrl*20 <= len(b) && letters*3 >= len(b)
}

func rot13(s string) string {
	// Byte by byte, so that the result has exactly the length of s and
	// offsets into it are offsets into s: strings.Map would turn each
	// invalid UTF-8 byte into a three-byte U+FFFD. ASCII letters never
	// occur inside a multi-byte sequence.
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = 'a' + (c-'a'+13)%26
		case c >= 'A' && c <= 'Z':
			b[i] = 'A' + (c-'A'+13)%26
		}
	}
	return string(b)
}
