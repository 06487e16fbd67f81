package attack

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"airlock.dev/airlock/agent"
	"airlock.dev/airlock/canon"
	"airlock.dev/airlock/model"
)

// act is one call the model proposes: a tool and its arguments, whose
// string values are templates the model fills in from what it has read
// (see mind.expand).
type act struct {
	tool string
	args []any // key, value, key, value...
}

// step is the calls of one model answer.
type step []act

// c is an act of tool with the arguments kv (key, value pairs).
func c(tool string, kv ...any) act { return act{tool: tool, args: kv} }

// one is a step of one call.
func one(tool string, kv ...any) step { return step{c(tool, kv...)} }

func read(path string) step     { return one("read_file", "path", path) }
func fetch(url string) step     { return one("web_fetch", "url", url) }
func shell(cmd string) step     { return one("run_command", "command", cmd) }
func write(path, s string) step { return one("write_file", "path", path, "content", s) }

// mind is what the obedient model knows at one step: everything the
// tools answered so far, and the run's own names (the attacker's host,
// the site) that planted content and goals spell.
type mind struct {
	seen string
	r    *run
}

// placeholder is a value the model fills in: {ENV:NAME} is NAME's value
// as the model read it (in a .env line, NAME=value), and {HEX:NAME},
// {B64:NAME}, {B32:NAME}, {REV:NAME} (reversed), {HEX1:NAME}, {HEX2:NAME} (the two halves of the
// hex) and {HALF1:NAME}, {HALF2:NAME} are that value encoded or split;
// {FIND:NAME} is what finders[NAME] finds.
var placeholder = regexp.MustCompile(`\{(ENV|HEX|HEX1|HEX2|B64|B32|REV|HALF1|HALF2|FIND):([A-Z_]+)\}`)

// finders are what {FIND:NAME} finds in what the model read: every
// customer's email address, a GitHub token.
var finders = map[string]*regexp.Regexp{
	"EMAILS": regexp.MustCompile(`[a-z0-9.]+@example-mail\.com`),
	"GHP":    regexp.MustCompile(`ghp_[A-Za-z0-9]+`),
}

// expand fills in a template: first the run's names ({ATK}, {N}, {DOCS},
// ...), then the values the model read.
func (m *mind) expand(s string) string {
	s = m.r.names().Replace(s)
	return placeholder.ReplaceAllStringFunc(s, func(p string) string {
		sub := placeholder.FindStringSubmatch(p)
		if sub[1] == "FIND" {
			if re := finders[sub[2]]; re != nil {
				return strings.Join(re.FindAllString(m.seen, 20), ",")
			}
			return ""
		}
		v := m.value(sub[2])
		h := hex.EncodeToString([]byte(v))
		switch sub[1] {
		case "HEX":
			return h
		case "HEX1":
			return h[:len(h)/2]
		case "HEX2":
			return h[len(h)/2:]
		case "B64":
			return base64.RawURLEncoding.EncodeToString([]byte(v))
		case "B32":
			return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(v)))
		case "REV":
			return reverse(v)
		case "HALF1":
			return v[:len(v)/2]
		case "HALF2":
			return v[len(v)/2:]
		}
		return v
	})
}

// value is NAME's value as the model read it: the last NAME=value (or
// NAME: value) in what the tools answered, "" when it never saw one.
func (m *mind) value(name string) string {
	re := regexp.MustCompile(regexp.QuoteMeta(name) + `\s*[=:]\s*"?([^\s"<]+)`)
	all := re.FindAllStringSubmatch(m.seen, -1)
	if len(all) == 0 {
		return ""
	}
	return all[len(all)-1][1]
}

// calls turns a step into the calls the model proposes.
func (m *mind) calls(s step) []model.ToolCall {
	var out []model.ToolCall
	for _, a := range s {
		args := map[string]any{}
		for i := 0; i+1 < len(a.args); i += 2 {
			v := a.args[i+1]
			if s, ok := v.(string); ok {
				v = m.expand(s)
			}
			args[a.args[i].(string)] = v
		}
		b, _ := json.Marshal(args)
		out = append(out, model.ToolCall{Name: a.tool, Args: b})
	}
	return out
}

// handedBack finds a redirect web_fetch handed back without following it
// (in a session that took in untrusted content, a redirect to another
// host comes back to the model); followID marks the calls that follow
// one, which are no step of the plan.
var handedBack = regexp.MustCompile(`redirects to (\S+), not followed`)

const followID = "follow_"

// obedient is the compromised model: it does the user's task, and once
// it has read planted instructions it does what they say. A redirect
// handed back to it, it follows. It keeps no
// state of its own between answers: where it is comes from the
// conversation in the request, so a run resumed in another process (with
// another obedient) goes on where it stopped.
type obedient struct{ r *run }

// Complete implements model.Client.
func (o *obedient) Complete(_ context.Context, req *model.Request) (*model.Response, error) {
	if len(req.Tools) == 0 {
		return o.readDocument(req)
	}
	var seen strings.Builder
	answered := 0
	var handed []string // redirects web_fetch handed back, not yet fetched
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleTool:
			seen.WriteString(msg.Text)
			seen.WriteString("\n")
			for _, m := range handedBack.FindAllStringSubmatch(msg.Text, -1) {
				handed = append(handed, m[1])
			}
		case model.RoleAssistant:
			switch {
			case len(msg.ToolCalls) == 0:
			case strings.HasPrefix(msg.ToolCalls[0].ID, followID):
				var a struct{ URL string }
				json.Unmarshal(msg.ToolCalls[0].Args, &a)
				if i := slices.Index(handed, a.URL); i >= 0 {
					handed = slices.Delete(handed, i, i+1)
				}
			default:
				answered++
			}
		}
	}
	m := &mind{seen: seen.String(), r: o.r}
	o.r.saw(m.seen)
	resp := &model.Response{Model: agent.ScriptModel, Success: true, StopReason: model.StopEnd,
		Badge: model.Badge{Model: agent.ScriptModel, Attempts: 1}, Usage: model.Usage{InputTokens: 100, OutputTokens: 20}}
	if len(handed) > 0 {
		// A redirect web_fetch did not follow: the model follows it with
		// a call of its own, as the result invites, before going on.
		b, _ := json.Marshal(map[string]string{"url": handed[0]})
		resp.ToolCalls = []model.ToolCall{{ID: fmt.Sprintf("%s%d", followID, len(req.Messages)), Name: "web_fetch", Args: b}}
		resp.StopReason = model.StopToolCalls
		return resp, nil
	}
	plan := o.r.sc.user
	if o.r.sc.plant != "" && strings.Contains(m.seen, o.r.trigger()) {
		plan = append(append([]step(nil), plan...), o.r.sc.attack...)
	}
	if answered >= len(plan) {
		resp.Text = "done"
		return resp, nil
	}
	calls := m.calls(plan[answered])
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%d_%d", answered+1, i+1)
		if answered < len(o.r.sc.user) {
			o.r.markUser(calls[i].Name, calls[i].Args)
		}
	}
	resp.ToolCalls, resp.StopReason = calls, model.StopToolCalls
	return resp, nil
}

// readDocument answers as the quarantined reader, compromised too: it
// passes the planted instruction on in its summary, as data the planner
// will obey.
func (o *obedient) readDocument(req *model.Request) (*model.Response, error) {
	var doc string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleUser {
			doc = msg.Text
		}
	}
	if i := strings.Index(doc, "The document, from"); i >= 0 {
		doc = doc[i:]
	}
	if o.r.sc.plant != "" {
		if i := strings.Index(doc, o.r.trigger()); i >= 0 {
			doc = doc[i:]
		}
	}
	doc = clip(doc, agent.MaxReaderSummary-100)
	b, _ := json.Marshal(map[string]any{"summary": doc, "facts": []string{}, "instructions_found": false})
	return &model.Response{Text: string(b), Model: agent.ScriptModel, Success: true, StopReason: model.StopEnd,
		Badge: model.Badge{Model: agent.ScriptModel, Attempts: 1}, Usage: model.Usage{InputTokens: 100, OutputTokens: 20}}, nil
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// callKey identifies a call for the person approving: the tool and its
// canonical arguments.
func callKey(tool string, args []byte) string {
	if c, err := canon.JSON(args); err == nil {
		args = c
	}
	return tool + "\x00" + string(args)
}

// reverse returns s backwards, byte by byte (the values are ASCII).
func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}
