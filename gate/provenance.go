package gate

import (
	"context"
	"sync"

	"airlock.dev/airlock/policy"
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
// the call has a goal) a sensitive token the goal never mentions.
func (g *Gate) intent(_ context.Context, c *call) outcome {
	t := c.entry.tool
	if t.Risk < tool.RiskMedium {
		return passOn(skipped)
	}
	if g.prov.flagged(c.Session) {
		if c.verdict.Action == policy.Allow {
			c.verdict = policy.Decision{Action: policy.Ask, Code: tool.CodeApprovalRequired, Rule: FlaggedRule,
				Reason: "content the injection scanner flagged reached this session earlier",
				Hint:   "A person must approve side effects in a session that read flagged content"}
		}
		return passOn(asked)
	}
	p := g.prov.lookup(c.Session)
	if p == nil && c.Goal == "" {
		return passOn(skipped)
	}
	if p == nil {
		p = untrusted.NewProvenance(nil)
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
func (g *Gate) ObserveUser(session, text string) {
	g.prov.session(session).Observe(untrusted.SourceUser, text)
}

// ObserveUntrusted records text that reached the session from an
// untrusted source outside this gate's own calls (a result read back from
// a checkpoint after a restart, a document another process fetched): a
// later medium- or high-risk call carrying one of its values asks first,
// as if the gate had seen it come in.
func (g *Gate) ObserveUntrusted(session, source, text string) {
	g.prov.session(session).Observe(source, text)
}

// MaxSessions bounds the sessions whose untrusted values the gate
// remembers; past it the oldest is forgotten.
const MaxSessions = 1024

// provenances holds a provenance tracker per session, the oldest dropped
// past MaxSessions.
type provenances struct {
	mu    sync.Mutex
	m     map[string]*untrusted.Provenance
	order []string
	flags map[string]bool // sessions that read flagged content
}

func (ps *provenances) flag(session string) {
	ps.session(session) // bounded with the rest
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.flags == nil {
		ps.flags = map[string]bool{}
	}
	ps.flags[session] = true
}

func (ps *provenances) flagged(session string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.flags[session]
}

func (ps *provenances) lookup(session string) *untrusted.Provenance {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.m[session]
}

func (ps *provenances) session(session string) *untrusted.Provenance {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p := ps.m[session]; p != nil {
		return p
	}
	if ps.m == nil {
		ps.m = map[string]*untrusted.Provenance{}
	}
	if len(ps.order) >= MaxSessions {
		delete(ps.m, ps.order[0])
		delete(ps.flags, ps.order[0])
		ps.order = ps.order[1:]
	}
	p := untrusted.NewProvenance(nil)
	ps.m[session] = p
	ps.order = append(ps.order, session)
	return p
}
