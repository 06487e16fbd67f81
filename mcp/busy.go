package mcp

import (
	"fmt"
	"sync"

	"airlock.dev/airlock/tool"
)

// busy counts the calls running at once, in all and per session. A
// session's count goes when its last call ends, so the map holds only
// sessions with calls in flight.
type busy struct {
	mu      sync.Mutex
	all     int
	session map[string]int
}

// enter counts one more call of session unless that would pass max calls
// in all or maxSession calls of the session; it says whether it did.
func (b *busy) enter(session string, max, maxSession int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.all >= max || b.session[session] >= maxSession {
		return false
	}
	if b.session == nil {
		b.session = map[string]int{}
	}
	b.all++
	b.session[session]++
	return true
}

// leave counts a call of session that entered as ended.
func (b *busy) leave(session string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.all--
	if b.session[session]--; b.session[session] <= 0 {
		delete(b.session, session)
	}
}

// busyError is the error value of a call refused at a limit.
func busyError(max, maxSession int) *tool.Error {
	return &tool.Error{Code: tool.CodeBusy,
		Message: fmt.Sprintf("the server already runs as many calls as it may (%d per session, %d in all); this one did not start", maxSession, max),
		Hint:    "Wait for your earlier calls to finish, then make this call again"}
}
