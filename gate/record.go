package gate

import (
	"crypto/sha256"
	"encoding/hex"

	"airlock.dev/airlock/audit"
	"airlock.dev/airlock/tool"
)

// record appends the call to the audit log: sizes and hashes of arguments
// and results, never their contents.
func (g *Gate) record(c *call, res *tool.Result) error {
	if g.opts.Audit == nil {
		return nil
	}
	e := audit.Entry{
		CallID: c.ID, Session: c.Session, Tool: c.Tool, Role: c.Role, Mode: c.Mode,
		Decision: res.Decision, Rule: res.Rule, Stages: c.stages,
		ArgsBytes: len(c.Args), ArgsSHA256: sha(c.Args),
		ResultBytes: len(res.Content), ResultSHA256: sha([]byte(res.Content)),
		Note: c.note,
	}
	if res.Error != nil {
		e.Code = string(res.Error.Code)
	}
	if !c.execute {
		e.Note = "check: nothing executed"
	}
	// The record is in the file when Append returns (audit writes at
	// once), so a crash of this process after a side effect cannot lose it.
	_, err := g.opts.Audit.Append(e)
	return err
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
