package mcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/tool"
)

// Upstream offers prompts and resources beside the gate's tools: the
// gateway's upstream servers' (package gateway). What they return is
// untrusted; the server hands every text of it to the gate (TakeIn), which
// redacts it, scans it, remembers its values for the session's provenance
// with the session marked tainted, and wraps it in an envelope naming its
// source, before the client sees it. Upstream gives text only: content of
// other kinds (images, audio, blobs) is named in a line of text.
type Upstream interface {
	Prompts() []*sdk.Prompt
	GetPrompt(ctx context.Context, name string, args map[string]string) (*sdk.GetPromptResult, string, *tool.Error)
	Resources() []*sdk.Resource
	ReadResource(ctx context.Context, uri string) (*sdk.ReadResourceResult, string, *tool.Error)
}

// addUpstream registers the upstream's prompts and resources.
func (s *server) addUpstream(srv *sdk.Server) {
	up := s.opts.Upstream
	for _, p := range up.Prompts() {
		srv.AddPrompt(p, s.getPrompt)
	}
	for _, r := range up.Resources() {
		srv.AddResource(r, s.readResource)
	}
}

// refusedRequest is the JSON-RPC error of a refused prompt or resource
// request: they have no tool result to carry an error value in.
func refusedRequest(e *tool.Error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errorText(e)}
}

func (s *server) getPrompt(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
	res, source, terr := s.opts.Upstream.GetPrompt(ctx, req.Params.Name, req.Params.Arguments)
	if terr != nil {
		return nil, refusedRequest(terr)
	}
	session := s.sessionID(ctx, req.Session)
	out := &sdk.GetPromptResult{Description: res.Description}
	for _, m := range res.Messages {
		taken, _, terr := s.gate.TakeIn(ctx, session, source, contentText(m.Content))
		if terr != nil {
			return nil, refusedRequest(terr)
		}
		out.Messages = append(out.Messages, &sdk.PromptMessage{Role: m.Role, Content: &sdk.TextContent{Text: taken}})
	}
	return out, nil
}

func (s *server) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	res, source, terr := s.opts.Upstream.ReadResource(ctx, req.Params.URI)
	if terr != nil {
		return nil, refusedRequest(terr)
	}
	session := s.sessionID(ctx, req.Session)
	out := &sdk.ReadResourceResult{}
	for _, c := range res.Contents {
		taken, _, terr := s.gate.TakeIn(ctx, session, source, c.Text)
		if terr != nil {
			return nil, refusedRequest(terr)
		}
		out.Contents = append(out.Contents, &sdk.ResourceContents{URI: c.URI, MIMEType: "text/plain", Text: taken})
	}
	return out, nil
}

// contentText is a prompt message's text: Upstream gives text only.
func contentText(c sdk.Content) string {
	if tc, ok := c.(*sdk.TextContent); ok {
		return tc.Text
	}
	return "[content that is not text, not shown]"
}
