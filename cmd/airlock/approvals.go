package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/runtime"
	"airlock.dev/airlock/store"
)

// openStore opens the store the settings name: --store's URL, else the
// embedded SQLite file of the workspace they name.
func openStore(s *settings) (store.Backend, error) {
	dir := ""
	if s.Store == "" {
		var err error
		if dir, err = s.workspaceDir(""); err != nil {
			return nil, err
		}
	}
	return runtime.OpenStore(context.Background(), s.Store, dir)
}

// notPending says what became of an approval that can no longer be
// decided, and what to do instead.
func notPending(a store.Approval) string {
	at := func(t time.Time) string { return t.Local().Format(time.DateTime) }
	switch a.Status {
	case store.StatusApproved:
		return fmt.Sprintf("approval %s is approved already (by %s at %s); the call runs once when it is made again in session %s, until %s",
			a.ID, a.DecidedBy, at(a.Decided), a.Session, at(a.Expires))
	case store.StatusDenied:
		return fmt.Sprintf("approval %s is denied already (by %s at %s); to let the call run after all, make the call again and approve the new approval",
			a.ID, a.DecidedBy, at(a.Decided))
	case store.StatusUsed:
		return fmt.Sprintf("approval %s is used: approved by %s at %s, and the call it was for has run; a repeat of the call asks anew",
			a.ID, a.DecidedBy, at(a.Decided))
	case store.StatusExpired:
		if a.Decided.IsZero() {
			return fmt.Sprintf("approval %s is expired: no one decided it before %s; make the call again and decide the new approval within %s",
				a.ID, at(a.Expires), store.DefaultApprovalTTL)
		}
		return fmt.Sprintf("approval %s is expired: approved by %s at %s, but the call was never made again before %s; make the call again to ask anew",
			a.ID, a.DecidedBy, at(a.Decided), at(a.Expires))
	}
	return fmt.Sprintf("approval %s is %q, not pending; `airlock approvals` lists the pending ones", a.ID, a.Status)
}

// decider names who decided, for the approval's record.
func decider() string {
	if u, err := user.Current(); err == nil {
		return "cli:" + u.Username
	}
	return "cli"
}

func runApprovals(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("approvals", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	asJSON := fs.Bool("json", false, "print one JSON object per approval")
	remembered := fs.Bool("remembered", false, "list the remembered approvals in force (airlock approve --remember) instead")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock approvals [--remembered] [--workspace DIR] [--json]\n\nLists the pending approvals, each with the exact call it would let run once;\nwith --remembered, the remembered approvals in force, each with the exact call\nit lets run again, its scope and expiry (`airlock revoke ID` ends one).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "approvals", err)
	}
	db, err := openStore(set)
	if err != nil {
		return refused(stderr, "approvals", err)
	}
	defer db.Close()
	if *remembered {
		return listRemembered(ctx, db, *asJSON, stdout, stderr)
	}
	list, err := db.PendingApprovals(ctx, time.Now())
	if err != nil {
		return refused(stderr, "approvals", err)
	}
	for _, a := range list {
		if *asJSON {
			line, _ := json.Marshal(a)
			fmt.Fprintf(stdout, "%s\n", line)
			continue
		}
		fmt.Fprintf(stdout, "%s  %s %s\n    asked by rule %s: %s\n    session %s, role %s, expires %s\n",
			a.ID, a.Tool, a.Args, a.Rule, a.Reason, a.Session, a.Role, a.Expires.Local().Format(time.DateTime))
	}
	if !*asJSON {
		fmt.Fprintf(stderr, "%d pending\n", len(list))
	}
	return exitOK
}

// listRemembered prints the remembered approvals in force.
func listRemembered(ctx context.Context, db store.Approvals, asJSON bool, stdout, stderr io.Writer) int {
	list, err := db.RememberedApprovals(ctx, time.Now())
	if err != nil {
		return refused(stderr, "approvals", err)
	}
	for _, r := range list {
		if asJSON {
			line, _ := json.Marshal(r)
			fmt.Fprintf(stdout, "%s\n", line)
			continue
		}
		used := "never used"
		if r.Uses > 0 {
			used = fmt.Sprintf("used %d times, last %s", r.Uses, r.LastUsed.Local().Format(time.DateTime))
		}
		fmt.Fprintf(stdout, "%s  %s %s\n    remembered for %s by %s until %s; %s\n    asked by rule %s; role %s, mode %s\n",
			r.ID, r.Tool, r.Args, scopeName(r.Scope, r.Session), r.ApprovedBy, r.Expires.Local().Format(time.DateTime), used,
			r.Rule, r.Role, r.Mode)
	}
	if !asJSON {
		fmt.Fprintf(stderr, "%d remembered\n", len(list))
	}
	return exitOK
}

// scopeName says where a remembered approval of scope holds.
func scopeName(scope store.Scope, session string) string {
	if scope == store.ScopeSession {
		return "session " + session
	}
	return "this workspace"
}

func runApprove(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return decide(ctx, "approve", true, args, stdout, stderr)
}

func runDeny(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return decide(ctx, "deny", false, args, stdout, stderr)
}

func decide(ctx context.Context, name string, approve bool, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	usage := fmt.Sprintf("usage: airlock %s ID [--workspace DIR]", name)
	var remember *string
	if approve {
		remember = fs.String("remember", "once", "how far the approval reaches: `once` (the one call, once), session (the same call for the rest of its session) or workspace (the same call in this workspace, any session, for "+rememberForText+")")
		usage = "usage: airlock approve ID [--remember once|session|workspace] [--workspace DIR]"
	}
	rest, err := interleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	scope := store.ScopeOnce
	if remember != nil {
		if scope, err = store.ParseScope(*remember); err != nil {
			fmt.Fprintf(stderr, "airlock %s: --remember: %v\n", name, err)
			return exitUsage
		}
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
		return exitUsage
	}
	db, err := openStore(set)
	if err != nil {
		fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
		return exitRefused
	}
	defer db.Close()
	now := time.Now()
	var a store.Approval
	if scope == store.ScopeOnce {
		a, err = db.DecideApproval(ctx, rest[0], approve, decider(), now)
	} else {
		a, err = db.RememberApproval(ctx, rest[0], scope, decider(), now, now.Add(store.RememberFor))
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		fmt.Fprintf(stderr, "airlock %s: no approval %s; `airlock approvals` lists the pending ones\n", name, rest[0])
		return exitRefused
	case errors.Is(err, store.ErrNotPending):
		fmt.Fprintf(stderr, "airlock %s: %s\n", name, notPending(a))
		return exitRefused
	case errors.Is(err, store.ErrCannotRemember):
		fmt.Fprintf(stderr, "airlock %s: approval %s cannot be remembered for the %s (it was asked with no workspace, or by an older airlock), and is still pending; approve it once with `airlock approve %s`\n",
			name, rest[0], scope, rest[0])
		return exitRefused
	case errors.Is(err, store.ErrTooManyRemembered):
		fmt.Fprintf(stderr, "airlock %s: %d remembered approvals are in force, the most there may be (store.MaxRemembered); approval %s is still pending. Revoke some with `airlock revoke ID` (`airlock approvals --remembered` lists them), or approve it once\n",
			name, store.MaxRemembered, rest[0])
		return exitRefused
	case err != nil:
		fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
		return exitRefused
	}
	fmt.Fprintf(stdout, "%s %s: %s %s\n", a.Status, a.ID, a.Tool, a.Args)
	if a.Rule == gate.ReviewRule {
		return decideHeld(ctx, db, set, a, approve, stdout, stderr)
	}
	if scope != store.ScopeOnce {
		fmt.Fprintf(stdout, "remembered for %s until %s: the same call runs there without asking; `airlock revoke %s` ends it\n",
			scopeName(scope, a.Session), now.Add(store.RememberFor).Local().Format(time.DateTime), a.ID)
	}
	return exitOK
}

// decideHeld carries out a person's decision on the changes a command
// left held for review: approved, they are applied now, under the
// session that made them (and the approval is used, so that the call made
// again does not apply them twice); denied, they are discarded.
func decideHeld(ctx context.Context, db store.Backend, set *settings, a store.Approval, approve bool, stdout, stderr io.Writer) int {
	dir, err := set.workspaceDir("")
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return exitRefused
	}
	ws, err := openRecovered(dir)
	if err != nil {
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return exitRefused
	}
	defer ws.Close()
	ov, _, err := ws.HeldOverlay(a.ID)
	if err != nil {
		fmt.Fprintf(stderr, "airlock: the changes held for approval %s: %v\n", a.ID, err)
		return exitRefused
	}
	if !approve {
		if err := ov.Discard(); err != nil {
			fmt.Fprintf(stderr, "airlock: discarding the held changes: %v\n", err)
			return exitRefused
		}
		fmt.Fprintln(stdout, "the command's changes were discarded; the workspace is as it was")
		return exitOK
	}
	changes, err := ov.Changes()
	if err != nil {
		ov.Close()
		fmt.Fprintf(stderr, "airlock: the changes held for approval %s: %v\n", a.ID, err)
		return exitRefused
	}
	applied, err := ov.Apply(a.Session, changes)
	if err != nil {
		fmt.Fprintf(stderr, "airlock: applying the changes held for approval %s: %v (the next start of airlock finishes applying them)\n", a.ID, err)
		return exitRefused
	}
	if _, _, err := db.ConsumeApproval(ctx, a.Tool, a.ArgsHash, time.Now()); err != nil {
		fmt.Fprintf(stderr, "airlock: the changes were applied, but approval %s could not be marked used: %v\n", a.ID, err)
		return exitRefused
	}
	fmt.Fprintf(stdout, "applied: %d added, %d modified, %d deleted; airlock rollback --session %s undoes them\n",
		applied.Added, applied.Modified, applied.Deleted, a.Session)
	return exitOK
}

// rememberForText is store.RememberFor as a person reads it.
var rememberForText = fmt.Sprintf("%d days", int(store.RememberFor/(24*time.Hour)))

func runRevoke(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("revoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	rest, err := interleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "usage: airlock revoke ID [--workspace DIR]\n\nEnds a remembered approval (airlock approve ID --remember ...): its call asks again.")
		return exitUsage
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "revoke", err)
	}
	db, err := openStore(set)
	if err != nil {
		return refused(stderr, "revoke", err)
	}
	defer db.Close()
	r, err := db.RevokeRemembered(ctx, rest[0], decider(), time.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		fmt.Fprintf(stderr, "airlock revoke: no remembered approval %s; `airlock approvals --remembered` lists them\n", rest[0])
		return exitRefused
	case errors.Is(err, store.ErrNotInForce) && !r.Revoked.IsZero():
		fmt.Fprintf(stderr, "airlock revoke: remembered approval %s was revoked already (by %s at %s); nothing to do\n",
			r.ID, r.RevokedBy, r.Revoked.Local().Format(time.DateTime))
		return exitRefused
	case errors.Is(err, store.ErrNotInForce):
		fmt.Fprintf(stderr, "airlock revoke: remembered approval %s expired at %s; nothing to do\n", r.ID, r.Expires.Local().Format(time.DateTime))
		return exitRefused
	case err != nil:
		return refused(stderr, "revoke", err)
	}
	fmt.Fprintf(stdout, "revoked %s: %s %s (remembered for %s; used %d times)\n", r.ID, r.Tool, r.Args, scopeName(r.Scope, r.Session), r.Uses)
	return exitOK
}
