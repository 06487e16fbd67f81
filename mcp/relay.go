package mcp

import (
	"context"
	"errors"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientKey is where a tools/call's context holds the client's session,
// for a tool that relays a question to the person at that client.
type clientKey struct{}

// ErrCannotElicit is RelayElicitation's answer when the call did not come
// from a client that can be asked.
var ErrCannotElicit = errors.New("mcp: the call's client cannot be asked (no elicitation capability, or no MCP client)")

// RelayElicitation asks the person at the client whose tools/call ctx
// belongs to, by elicitation: the gateway relays an upstream server's
// question through it. It works with clients that declared elicitation
// and keep a session (stdio, or HTTP without replicas).
func RelayElicitation(ctx context.Context, params *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	ss, _ := ctx.Value(clientKey{}).(*sdk.ServerSession)
	if ss == nil || !canElicit(ss) {
		return nil, ErrCannotElicit
	}
	return ss.Elicit(ctx, params)
}
