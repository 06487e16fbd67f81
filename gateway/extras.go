package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// MaxExtras is the most prompts, and the most resources, one upstream may
// offer; past it the rest are left out, with a warning.
const MaxExtras = 1000

// An upstream's prompts and resources are offered beside its tools, each
// pinned and scanned like a tool's definition. A prompt is named
// SERVER__PROMPT; a resource keeps its URI (a URI two servers share is
// offered from the first, by name). What they return is untrusted: the
// door hands it to the gate's TakeIn before the client sees it.

// extra is one upstream prompt or resource as the gateway offers it.
type extra struct {
	name     string // the prompt's gateway name, or the resource's URI
	server   string
	upstream string // the upstream's name of the prompt, or the URI
	prompt   *sdk.Prompt
	resource *sdk.Resource
	state    State
	reason   string
}

// listExtras lists an upstream's prompts and resources, when its
// capabilities say it has them.
func (u *upstream) listExtras(ctx context.Context) ([]*sdk.Prompt, []*sdk.Resource, error) {
	cs, err := u.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.StartTimeout)
	defer cancel()
	caps := &sdk.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	var prompts []*sdk.Prompt
	if caps.Prompts != nil {
		if prompts, err = take(cs.Prompts(ctx, nil), MaxExtras, func() {
			u.log.Warn("gateway: upstream offers more than MaxExtras prompts; the rest are left out", "server", u.name)
		}); err != nil {
			return nil, nil, err
		}
	}
	var resources []*sdk.Resource
	if caps.Resources != nil {
		if resources, err = take(cs.Resources(ctx, nil), MaxExtras, func() {
			u.log.Warn("gateway: upstream offers more than MaxExtras resources; the rest are left out", "server", u.name)
		}); err != nil {
			return nil, nil, err
		}
	}
	return prompts, resources, nil
}

// admitExtras pins and adds a server's prompts and resources.
func (g *Gateway) admitExtras(ctx context.Context, server string, prompts []*sdk.Prompt, resources []*sdk.Resource) error {
	for _, p := range prompts {
		st, reason, pinned, err := g.reconcileDef(ctx, store.PinKey{Server: server, Kind: store.PinPrompt, Name: p.Name}, p, promptText(p))
		if err != nil {
			return err
		}
		def := p
		if pinned != nil {
			def = new(sdk.Prompt)
			if json.Unmarshal(pinned, def) != nil {
				def = p
			}
		}
		name := server + g.cfg.Separator + p.Name
		g.addExtra(&extra{name: name, server: server, upstream: p.Name, prompt: def, state: st, reason: reason})
	}
	for _, r := range resources {
		st, reason, pinned, err := g.reconcileDef(ctx, store.PinKey{Server: server, Kind: store.PinResource, Name: r.URI}, r, resourceText(r))
		if err != nil {
			return err
		}
		def := r
		if pinned != nil {
			def = new(sdk.Resource)
			if json.Unmarshal(pinned, def) != nil {
				def = r
			}
		}
		g.addExtra(&extra{name: r.URI, server: server, upstream: r.URI, resource: def, state: st, reason: reason})
	}
	return nil
}

// refreshExtras disables each of a server's offered prompts and
// resources whose listed definition no longer matches its pin.
func (g *Gateway) refreshExtras(ctx context.Context, server string, prompts []*sdk.Prompt, resources []*sdk.Resource) error {
	check := func(name string, k store.PinKey, v any, text []string) error {
		st, reason, _, err := g.reconcileDef(ctx, k, v, text)
		if err != nil {
			return err
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if e, ok := g.extras[name]; ok && e.server == server && e.state == StateOffered && st != StateOffered {
			e.state, e.reason = st, reason
			g.log.Warn("gateway: prompt or resource disabled", "name", name, "state", st, "reason", reason)
		}
		return nil
	}
	for _, p := range prompts {
		if err := check(server+g.cfg.Separator+p.Name, store.PinKey{Server: server, Kind: store.PinPrompt, Name: p.Name}, p, promptText(p)); err != nil {
			return err
		}
	}
	for _, r := range resources {
		if err := check(r.URI, store.PinKey{Server: server, Kind: store.PinResource, Name: r.URI}, r, resourceText(r)); err != nil {
			return err
		}
	}
	return nil
}

// promptText and resourceText are what a model reads of a definition,
// piece by piece, for the scanner.
func promptText(p *sdk.Prompt) []string {
	out := []string{p.Title, p.Description}
	for _, a := range p.Arguments {
		out = append(out, a.Title, a.Description)
	}
	return out
}

func resourceText(r *sdk.Resource) []string { return []string{r.Title, r.Name, r.Description} }

func (g *Gateway) addExtra(e *extra) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.extras[e.name]; dup {
		g.log.Warn("gateway: two servers offer one prompt or resource name; the second is left out", "name", e.name, "server", e.server)
		return
	}
	g.extras[e.name] = e
	if e.state != StateOffered {
		g.log.Warn("gateway: prompt or resource not offered", "name", e.name, "state", e.state, "reason", e.reason)
	}
}

// Prompts are the upstream prompts offered, each named SERVER__PROMPT,
// with its pinned definition.
func (g *Gateway) Prompts() []*sdk.Prompt {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*sdk.Prompt
	for _, name := range slices.Sorted(maps.Keys(g.extras)) {
		if e := g.extras[name]; e.prompt != nil && e.state == StateOffered {
			p := *e.prompt
			p.Name = e.name
			out = append(out, &p)
		}
	}
	return out
}

// Resources are the upstream resources offered, with their pinned
// definitions.
func (g *Gateway) Resources() []*sdk.Resource {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*sdk.Resource
	for _, name := range slices.Sorted(maps.Keys(g.extras)) {
		if e := g.extras[name]; e.resource != nil && e.state == StateOffered {
			r := *e.resource
			out = append(out, &r)
		}
	}
	return out
}

// offeredExtra returns the offered prompt or resource of that name, or the
// error value that says why it is not.
func (g *Gateway) offeredExtra(name string, prompt bool) (*extra, *tool.Error) {
	g.mu.RLock()
	e, ok := g.extras[name]
	g.mu.RUnlock()
	switch {
	case !ok || (e.prompt != nil) != prompt:
		return nil, tool.Errorf(tool.CodeNotFound, "List them again (prompts/list, resources/list)", "%s is not offered", name)
	case e.state == StateChanged:
		return nil, tool.Errorf(CodeToolChanged, "A person can review it with `airlock gateway pins` and accept it with `airlock gateway accept`",
			"the %s server changed the definition of %s since it was pinned (%s)", e.server, e.upstream, e.reason)
	case e.state != StateOffered:
		return nil, tool.Errorf(CodeToolFlagged, "A person can review it with `airlock gateway pins` and accept it with `airlock gateway accept`",
			"%s is not offered: %s", name, e.reason)
	}
	return e, nil
}

// extraSession finds the offered prompt or resource of that name and its
// upstream's connection, and gives the context of one request to it,
// within the server's timeout.
func (g *Gateway) extraSession(ctx context.Context, name string, prompt bool) (*extra, *sdk.ClientSession, context.Context, context.CancelFunc, *tool.Error) {
	e, terr := g.offeredExtra(name, prompt)
	if terr != nil {
		return nil, nil, nil, nil, terr
	}
	u := g.ups[e.server]
	cs, err := u.session(ctx)
	if err != nil {
		return nil, nil, nil, nil, unavailable(e.server, err, g.opts.Redact).Error
	}
	callCtx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	return e, cs, callCtx, cancel, nil
}

// GetPrompt gets a prompt from its upstream, every message as text (a
// part that is not text is named in a line). The result is untrusted:
// the caller hands its text to the gate (TakeIn) with source.
func (g *Gateway) GetPrompt(ctx context.Context, name string, args map[string]string) (res *sdk.GetPromptResult, source string, terr *tool.Error) {
	e, cs, callCtx, cancel, terr := g.extraSession(ctx, name, true)
	if terr != nil {
		return nil, "", terr
	}
	defer cancel()
	up, err := cs.GetPrompt(callCtx, &sdk.GetPromptParams{Name: e.upstream, Arguments: args})
	if err != nil {
		return nil, "", extraError(e, err, g.warn)
	}
	res = &sdk.GetPromptResult{Description: up.Description}
	for _, m := range up.Messages {
		res.Messages = append(res.Messages, &sdk.PromptMessage{Role: m.Role, Content: &sdk.TextContent{Text: contentText(m.Content)}})
	}
	return res, "mcp:" + e.server + "/prompt/" + e.upstream, nil
}

// ReadResource reads a resource from its upstream; like GetPrompt, its
// result is untrusted.
func (g *Gateway) ReadResource(ctx context.Context, uri string) (res *sdk.ReadResourceResult, source string, terr *tool.Error) {
	e, cs, callCtx, cancel, terr := g.extraSession(ctx, uri, false)
	if terr != nil {
		return nil, "", terr
	}
	defer cancel()
	up, err := cs.ReadResource(callCtx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, "", extraError(e, err, g.warn)
	}
	res = &sdk.ReadResourceResult{}
	for _, c := range up.Contents {
		text := c.Text
		if text == "" && len(c.Blob) > 0 {
			text = fmt.Sprintf("[%s, %d bytes, not shown]", c.MIMEType, len(c.Blob))
		}
		res.Contents = append(res.Contents, &sdk.ResourceContents{URI: c.URI, MIMEType: "text/plain", Text: text})
	}
	return res, "mcp:" + e.server + "/resource/" + uri, nil
}

// extraError is the error value of a failed prompt or resource request.
// The upstream's own words go to the log only: they are untrusted text,
// and an error value is not wrapped as content is.
func extraError(e *extra, err error, warn func(string, error, ...any)) *tool.Error {
	warn("gateway: an upstream prompt or resource request failed", err, "server", e.server, "name", e.upstream)
	return tool.Errorf(CodeUpstreamError, "Try again later, or ask the operator to look at airlock's log",
		"the %s server could not answer for %s", e.server, e.upstream)
}
