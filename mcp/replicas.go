package mcp

// Replicas. The SDK's stateful handler keeps each MCP session in the
// memory of the process that opened it, so a request sent to another
// replica gets 404. With HTTPOptions.Replicas the SDK serves every
// request statelessly, and this layer in front of it keeps the session:
//
//   - a POST without Mcp-Session-Id (initialize, server/discover, or a
//     request of a client that keeps no session) starts one: its
//     response carries Mcp-Session-Id = ID "." TAG, where ID is random
//     (rand.Text, 128 bits and more) and TAG the HMAC-SHA256, under
//     SessionKey, of ID and the caller's principal (the bearer token's
//     user id, "" without tokens);
//   - a request with Mcp-Session-Id is served when its TAG verifies for
//     this caller, by any replica with the same key, and answered 404
//     otherwise (a forged, edited or another token's id), which tells the
//     client to initialize anew;
//   - the verified ID goes with the request, in its context, to the tool
//     handler: it is the gate's session of the request's calls;
//   - a call ends when its HTTP request does (the client cancelled it, or
//     went away): the client's notifications/cancelled is a request of
//     its own, which may reach another replica, and no replica could
//     deliver the result of a request whose client has gone.
//
// Everything else a session has that matters lives in the store the
// replicas share (Options.Sessions and the gate's): steps, approvals, the
// ledger, the kill switch, and the provenance of what the session read. A replica holds no session state of its own,
// so no sticky routing is needed. GET answers 405 (no server-sent stream:
// the spec allows it) and DELETE 204 for a session that verifies: there
// is nothing to free.
//
// A stateless server cannot send a request to the client, so a client
// before protocol 2026-07-28 is never asked for approval (elicitation):
// its calls end approval_required, naming the approval, for `airlock
// approve`. A client on 2026-07-28 gets the question as an input request,
// and its answer may reach any replica: the request state is signed with
// the same key.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"airlock.dev/airlock/canon"
)

// MinSessionKeyBytes is the shortest HTTPOptions.SessionKey accepted.
const MinSessionKeyBytes = 32

// sessionHeader is the Streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// sessionLabel separates the tag of a session id from any other use of
// the same key (the request state's).
const sessionLabel = "airlock.dev/mcp/session/v1"

// replicaRequest is what the replica layer hands the tool handler, in the
// request's context: the verified session id, and the HTTP request's own
// context, which the SDK does not pass on as the handler's.
type replicaRequest struct {
	session string
	http    context.Context
}

type replicaKey struct{}

// replicaFromContext returns what the replica layer verified, if it
// served the request.
func replicaFromContext(ctx context.Context) (replicaRequest, bool) {
	rr, ok := ctx.Value(replicaKey{}).(replicaRequest)
	return rr, ok
}

// replicaSessions is the session layer in front of the stateless SDK
// handler.
type replicaSessions struct {
	key  []byte
	next http.Handler
}

func (rs *replicaSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal := ""
	if info, ok := r.Context().Value(verifiedKey{}).(*auth.TokenInfo); ok {
		principal = info.UserID
	}
	header := r.Header.Get(sessionHeader)
	if header == "" {
		if r.Method != http.MethodPost {
			rs.next.ServeHTTP(w, r) // the SDK refuses it: 405
			return
		}
		id := rand.Text()
		w.Header().Set(sessionHeader, id+"."+rs.tag(id, principal))
		rs.next.ServeHTTP(w, withSession(r, id))
		return
	}
	id, tag, _ := strings.Cut(header, ".")
	if id == "" || !hmac.Equal([]byte(tag), []byte(rs.tag(id, principal))) {
		http.Error(w, "session not found: this Mcp-Session-Id was not issued to this caller; initialize a new session", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	rs.next.ServeHTTP(w, withSession(r, id))
}

// tag binds a session id to the principal it was issued to.
func (rs *replicaSessions) tag(id, principal string) string {
	return canon.Bind(rs.key, sessionLabel, id, principal)
}

func withSession(r *http.Request, id string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), replicaKey{}, replicaRequest{session: id, http: r.Context()}))
}
