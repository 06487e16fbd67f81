package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/untrusted"
)

// IntentRule names the intent stage's asks for untrusted values and
// tokens off the goal; FlaggedRule its asks in a session that read flagged
// content (OnFlagged: FlaggedAsk); TaintRule its asks for an external
// effect in a session that took in untrusted content.
const (
	IntentRule  = "intent:provenance"
	FlaggedRule = "intent:flagged-content"
	TaintRule   = "ask:tainted-egress"
)

// intent asks before a call that a session's untrusted content may have
// steered. A medium- or high-risk call asks in a session that read
// flagged content (OnFlagged: FlaggedAsk), and when an argument carries a
// value which reached the session only through untrusted content, or
// (when the call has a goal) a sensitive token the goal never mentions.
// Then the taint, which matches no strings: once a session has taken in
// untrusted content, a call with an external effect (see
// tool.IsExternal), of any risk, asks in every mode unless each of its
// destinations is one the user named or the policy's
// untrusted.tainted_egress allows. With Options.Sessions it reads what
// the session took in from the store first, whichever process or replica
// it came in through.
func (g *Gate) intent(ctx context.Context, c *call) outcome {
	t := c.entry.tool
	external := tool.IsExternal(t.Effect, t.Class)
	if t.Risk < tool.RiskMedium && !external {
		return passOn(skipped)
	}
	sp := g.prov.session(c.Session)
	if g.opts.Sessions != nil {
		st, err := sp.refresh(ctx, g.opts.Sessions, c.Session)
		if err != nil {
			c.note = err.Error()
			return endCall(failed, internalError("the session store failed"))
		}
		c.state = &st
	}
	p, marks := sp.read()
	c.Tainted = marks.Has(store.MarkTainted)
	ask := func(rule, reason, hint string) outcome {
		if c.verdict.Action == policy.Allow {
			c.verdict = policy.Decision{Action: policy.Ask, Code: tool.CodeApprovalRequired, Rule: rule, Reason: reason, Hint: hint}
		}
		return passOn(asked)
	}
	checked := false // whether anything was there to check the call against
	if t.Risk >= tool.RiskMedium {
		if marks.Has(store.MarkFlagged) {
			return ask(FlaggedRule, "content the injection scanner flagged reached this session earlier",
				"A person must approve side effects in a session that read flagged content")
		}
		tainted, user := p.Len()
		if tainted > 0 || user > 0 || c.Goal != "" || p.Truncated() {
			checked = true
			if yes, reason := p.Check(t.Risk.String(), c.Args, c.Goal); yes {
				return ask(IntentRule, reason, "A person must approve a call whose arguments came from untrusted content; or take the value from the user")
			}
		}
	}
	if external && marks.Has(store.MarkTainted) {
		checked = true
		if reason := g.taintReason(c, p); reason != "" {
			return ask(TaintRule, reason,
				"A person must approve an external effect in a session that read untrusted content; or name the destination in your own message, or allow it in the policy's untrusted.tainted_egress")
		}
	}
	if !checked {
		return passOn(skipped)
	}
	return passOn(passed)
}

// taintReason says why an external call in a tainted session must ask,
// or "" when it need not: the policy allows the tool, or every
// destination of the call is one the user named or the policy allows. A
// tool that runs commands has no destination it can be held to (what it
// runs decides where it connects), and a call with no destination found
// asks too.
func (g *Gate) taintReason(c *call, p *untrusted.Provenance) string {
	t := c.entry.tool
	allow := g.opts.Policy.TaintedEgress()
	if allow.AllowsTool(t.Name) {
		return ""
	}
	what := "an external effect"
	if t.Class != "" {
		what = "a " + string(t.Class) + " effect"
	}
	prefix := fmt.Sprintf("this session took in untrusted content earlier, and %s is %s", t.Name, what)
	if t.CommandArg != "" {
		return prefix + " whose commands can reach any host the egress policy allows"
	}
	dests, err := destinations(t, c.args, c.Args)
	if err != nil {
		return prefix + ", and its destinations cannot be read: " + err.Error()
	}
	if len(dests) == 0 {
		return prefix + " to a destination airlock cannot tell from its arguments"
	}
	goal := strings.ToLower(c.Goal)
	for _, d := range dests {
		if !p.Has(untrusted.SourceUser, d) && !allow.AllowsHost(d) && !mentionsWhole(goal, d) {
			return fmt.Sprintf("%s to %q, which the user did not name and the policy does not allow", prefix, truncate(d, 80))
		}
	}
	return ""
}

// destinations lists where a call sends: the host of each URL argument
// (from the arguments the validate stage decoded), and what
// untrusted.Destinations reads in its destination fields.
func destinations(t *tool.Tool, args map[string]any, raw json.RawMessage) ([]string, error) {
	var out []string
	for _, name := range t.URLArgs {
		s, ok := args[name].(string)
		if !ok {
			continue
		}
		if u, err := url.Parse(s); err == nil && u.Hostname() != "" {
			out = append(out, untrusted.CanonicalHost(u.Hostname()))
		} else {
			out = append(out, s) // no host to read: the user must have named it whole
		}
	}
	more, err := untrusted.Destinations(raw)
	return append(out, more...), err
}

// mentionsWhole reports whether the goal (lower case) holds d as a whole
// word: a destination the user named in words Values does not extract
// ("send it to ops-team").
func mentionsWhole(goal, d string) bool {
	d = strings.ToLower(d)
	for i := 0; d != "" && i <= len(goal); {
		j := strings.Index(goal[i:], d)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(d)
		// A dot after it ends the sentence unless a word goes on.
		endsHere := end == len(goal) || !isWordByte(goal[end]) ||
			goal[end] == '.' && (end+1 == len(goal) || !isWordByte(goal[end+1]))
		if (start == 0 || !isWordByte(goal[start-1])) && endsHere {
			return true
		}
		i = start + 1
	}
	return false
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_' || b == '-' || b == '.' || b == '@' || b >= 0x80
}

// ObserveUser records text the user gave the session (a goal, a
// message): its values are the user's, so calls carrying them do not ask.
// With Options.Sessions it is kept in the store, for every process.
func (g *Gate) ObserveUser(ctx context.Context, session, text string) error {
	return g.observe(ctx, session, untrusted.SourceUser, text, 0)
}

// ObserveUntrusted records text that reached the session from an
// untrusted source outside this gate's own calls (a document another
// program fetched): a later medium- or high-risk call carrying one of its
// values asks first, as if the gate had seen it come in.
func (g *Gate) ObserveUntrusted(ctx context.Context, session, source, text string) error {
	if source == untrusted.SourceUser {
		return fmt.Errorf("gate: %q is the user's source; name where the untrusted text came from", source)
	}
	return g.observe(ctx, session, source, text, store.MarkTainted)
}

// observe records the values in text as come from source, and marks
// the session (tainted: it read untrusted content; flagged: content the
// scanner flagged): in the store when the gate has one (the next call of
// any process reads it back from there), else in this gate's memory.
func (g *Gate) observe(ctx context.Context, session, source, text string, marks store.Marks) error {
	vs := untrusted.Values(text)
	sp := g.prov.session(session)
	if g.opts.Sessions == nil {
		sp.add(source, vs, marks)
		return nil
	}
	// What this gate read back from the store already needs no write: a
	// session that reads the same file again costs no store round trip.
	vs = sp.unknown(source, vs)
	if len(vs) == 0 && sp.hasMarks(marks) {
		return nil
	}
	if len(vs) > store.MaxObserveBatch {
		vs = vs[len(vs)-store.MaxObserveBatch:] // the session keeps the newest anyway
	}
	if len(source) > store.MaxObservationSource {
		source = source[:store.MaxObservationSource]
	}
	obs := make([]store.Observation, len(vs))
	for i, v := range vs {
		obs[i] = store.Observation{Source: source, Value: v}
	}
	if err := g.opts.Sessions.Observe(ctx, session, obs, marks, time.Now()); err != nil {
		return fmt.Errorf("gate: recording what reached session %q: %w", session, err)
	}
	sp.add(source, vs, marks) // as the next read from the store would
	return nil
}

// MaxSessions bounds the sessions whose provenance the gate holds in
// memory; past it the oldest is forgotten. With Options.Sessions that
// memory is a cache of the store: a forgotten session is read back whole
// at its next call.
const MaxSessions = 1024

// provenances holds each session's provenance, the oldest dropped past
// MaxSessions.
type provenances struct {
	mu    sync.Mutex
	m     map[string]*sessionProv
	order []string
}

// sessionProv is one session's provenance: the values it took in, its
// marks (tainted, flagged), and, as a cache of the store, the last
// observation read from there.
type sessionProv struct {
	mu    sync.Mutex
	p     *untrusted.Provenance
	marks store.Marks
	after int64 // the Seq of the last observation read from the store
}

// refresh reads from the store what reached the session since the last
// read, and returns the session's state as read.
func (sp *sessionProv) refresh(ctx context.Context, ss store.Sessions, session string) (store.SessionState, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	st, err := ss.State(ctx, session, sp.after)
	if err != nil {
		return st, err
	}
	for _, o := range st.Observations {
		sp.p.Add(o.Source, o.Value)
		sp.after = max(sp.after, o.Seq)
	}
	if st.Session.Flagged {
		sp.marks |= store.MarkFlagged
	}
	if st.Session.Tainted {
		sp.marks |= store.MarkTainted
	}
	if st.Session.Truncated {
		sp.p.MarkTruncated() // the store forgot values: none is safe for that
	}
	return st, nil
}

func (sp *sessionProv) add(source string, vs []string, marks store.Marks) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, v := range vs {
		sp.p.Add(source, v)
	}
	sp.marks |= marks
}

// unknown returns the values of vs the cache does not hold from a source
// of source's kind (the user, or untrusted content).
func (sp *sessionProv) unknown(source string, vs []string) []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	out := vs[:0:0]
	for _, v := range vs {
		if !sp.p.Has(source, v) {
			out = append(out, v)
		}
	}
	return out
}

func (sp *sessionProv) hasMarks(m store.Marks) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.marks.Has(m)
}

func (sp *sessionProv) read() (*untrusted.Provenance, store.Marks) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.p, sp.marks
}

func (ps *provenances) session(session string) *sessionProv {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if sp := ps.m[session]; sp != nil {
		return sp
	}
	if ps.m == nil {
		ps.m = map[string]*sessionProv{}
	}
	if len(ps.order) >= MaxSessions {
		delete(ps.m, ps.order[0])
		ps.order = ps.order[1:]
	}
	sp := &sessionProv{p: untrusted.NewProvenance(nil)}
	ps.m[session] = sp
	ps.order = append(ps.order, session)
	return sp
}
