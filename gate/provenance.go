package gate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"airlock.dev/airlock/policy"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
	"airlock.dev/airlock/untrusted"
)

// IntentRule names the intent stage's asks for untrusted values and
// tokens off the goal; FlaggedRule its asks in a session that read flagged
// content (OnFlagged: FlaggedAsk).
const (
	IntentRule  = "intent:provenance"
	FlaggedRule = "intent:flagged-content"
)

// intent asks before a medium- or high-risk call whose arguments carry a
// value that reached the session only through untrusted content, or (when
// the call has a goal) a sensitive token the goal never mentions. With
// Options.Sessions it reads what the session took in from the store
// first, whichever process or replica it came in through.
func (g *Gate) intent(ctx context.Context, c *call) outcome {
	t := c.entry.tool
	if t.Risk < tool.RiskMedium {
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
	p, flagged := sp.read()
	if flagged {
		if c.verdict.Action == policy.Allow {
			c.verdict = policy.Decision{Action: policy.Ask, Code: tool.CodeApprovalRequired, Rule: FlaggedRule,
				Reason: "content the injection scanner flagged reached this session earlier",
				Hint:   "A person must approve side effects in a session that read flagged content"}
		}
		return passOn(asked)
	}
	if tainted, user := p.Len(); tainted == 0 && user == 0 && c.Goal == "" {
		return passOn(skipped) // nothing to check the call against
	}
	ask, reason := p.Check(t.Risk.String(), c.Args, c.Goal)
	if !ask {
		return passOn(passed)
	}
	if c.verdict.Action == policy.Allow {
		c.verdict = policy.Decision{Action: policy.Ask, Code: tool.CodeApprovalRequired, Rule: IntentRule,
			Reason: reason, Hint: "A person must approve a call whose arguments came from untrusted content; or take the value from the user"}
	}
	return passOn(asked)
}

// ObserveUser records text the user gave the session (a goal, a
// message): its values are the user's, so calls carrying them do not ask.
// With Options.Sessions it is kept in the store, for every process.
func (g *Gate) ObserveUser(ctx context.Context, session, text string) error {
	return g.observe(ctx, session, untrusted.SourceUser, text, false)
}

// ObserveUntrusted records text that reached the session from an
// untrusted source outside this gate's own calls (a document another
// program fetched): a later medium- or high-risk call carrying one of its
// values asks first, as if the gate had seen it come in.
func (g *Gate) ObserveUntrusted(ctx context.Context, session, source, text string) error {
	if source == untrusted.SourceUser {
		return fmt.Errorf("gate: %q is the user's source; name where the untrusted text came from", source)
	}
	return g.observe(ctx, session, source, text, false)
}

// observe records the values in text as come from source, and flag marks
// the session as one that read flagged content: in the store when the
// gate has one (the next call of any process reads it back from there),
// else in this gate's memory.
func (g *Gate) observe(ctx context.Context, session, source, text string, flag bool) error {
	vs := untrusted.Values(text)
	sp := g.prov.session(session)
	if g.opts.Sessions == nil {
		sp.add(source, vs, flag)
		return nil
	}
	// What this gate read back from the store already needs no write: a
	// session that reads the same file again costs no store round trip.
	vs = sp.unknown(source, vs)
	if len(vs) == 0 && (!flag || sp.isFlagged()) {
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
	if err := g.opts.Sessions.Observe(ctx, session, obs, flag, time.Now()); err != nil {
		return fmt.Errorf("gate: recording what reached session %q: %w", session, err)
	}
	sp.add(source, vs, flag) // as the next read from the store would
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

// sessionProv is one session's provenance: the values it took in, whether
// it read flagged content, and, as a cache of the store, the last
// observation read from there.
type sessionProv struct {
	mu      sync.Mutex
	p       *untrusted.Provenance
	flagged bool
	after   int64 // the Seq of the last observation read from the store
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
	sp.flagged = sp.flagged || st.Session.Flagged
	return st, nil
}

func (sp *sessionProv) add(source string, vs []string, flag bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, v := range vs {
		sp.p.Add(source, v)
	}
	sp.flagged = sp.flagged || flag
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

func (sp *sessionProv) isFlagged() bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.flagged
}

func (sp *sessionProv) read() (*untrusted.Provenance, bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.p, sp.flagged
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
