package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/sqlite"
	"airlock.dev/airlock/store/storeurl"
)

// statePath is where a workspace's embedded store lives.
func statePath(ws string) string { return filepath.Join(stateDir(ws), "state.db") }

// openStore opens the store the settings name: --store's URL, else the
// embedded SQLite file of the workspace they name.
func openStore(s *settings) (store.Backend, error) {
	if s.Store != "" {
		return storeurl.Open(context.Background(), s.Store)
	}
	dir, err := s.workspaceDir("")
	if err != nil {
		return nil, err
	}
	return openBackend(s, dir)
}

// openBackend opens --store's URL, else the embedded store of workspace
// dir (.airlock/state.db).
func openBackend(s *settings, dir string) (store.Backend, error) {
	if s.Store != "" {
		return storeurl.Open(context.Background(), s.Store)
	}
	if err := checkStateDir(dir); err != nil {
		return nil, err
	}
	db, err := sqlite.Open(statePath(dir), nil)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// approvalKeyFile is where, under the user's config directory, the key
// approvals are keyed with lives: outside every workspace, so that a state
// file shipped in one cannot hold approvals that match.
const approvalKeyFile = "airlock/approval.key"

// approvalKeySize is the size of the approval key, in bytes.
const approvalKeySize = 32

// approvalKey loads the approval key, creating it (approvalKeySize random
// bytes, mode 0600) on first use. Processes that start together may all
// find no key: each writes a whole key to a temporary file beside it and
// links that into place. Only the first link succeeds; every other process
// reads the key it put there. So no process ever reads a key file that is
// not yet written, and no key that a process may already be using is ever
// replaced (a rename would replace it: the last writer would win).
func approvalKey() ([]byte, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("approval key: no config directory (set XDG_CONFIG_HOME): %w", err)
	}
	path := filepath.Join(dir, approvalKeyFile)
	key, err := readApprovalKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("approval key: %w", err)
	}
	if err := linkNewApprovalKey(path); err != nil {
		return nil, err
	}
	return readApprovalKey(path)
}

// readApprovalKey reads the key at path; an error that wraps
// fs.ErrNotExist when there is none.
func readApprovalKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("approval key: %w", err)
	case len(key) != approvalKeySize:
		return nil, fmt.Errorf("approval key %s: %d bytes, want %d; remove it to make a new one", path, len(key), approvalKeySize)
	}
	return key, nil
}

// linkNewApprovalKey writes a new key to a temporary file in path's
// directory, makes it durable, and links it to path unless a key is there
// already (another process won): either way path then holds a whole key.
func linkNewApprovalKey(path string) error {
	fail := func(err error) error {
		return fmt.Errorf("approval key %s: %w; or make one yourself: head -c %d /dev/urandom > %s && chmod 600 %s",
			path, err, approvalKeySize, path, path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".approval.key.*") // mode 0600
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name())
	key := make([]byte, approvalKeySize)
	rand.Read(key)
	_, werr := tmp.Write(key)
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return fail(err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fail(err)
	}
	// The new name must survive a crash too, or a later start would make
	// another key and every approval keyed with this one would be lost.
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fail(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fail(err)
	}
	return nil
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
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock approvals [--workspace DIR] [--json]\n\nLists the pending approvals, each with the exact call it would let run once.\n\nflags:")
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
	rest, err := interleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "usage: airlock %s ID [--workspace DIR]\n", name)
		return exitUsage
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
	a, err := db.DecideApproval(ctx, rest[0], approve, decider(), time.Now())
	switch {
	case errors.Is(err, store.ErrNotFound):
		fmt.Fprintf(stderr, "airlock %s: no approval %s; `airlock approvals` lists the pending ones\n", name, rest[0])
		return exitRefused
	case errors.Is(err, store.ErrNotPending):
		fmt.Fprintf(stderr, "airlock %s: %s\n", name, notPending(a))
		return exitRefused
	case err != nil:
		fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
		return exitRefused
	}
	fmt.Fprintf(stdout, "%s %s: %s %s\n", a.Status, a.ID, a.Tool, a.Args)
	return exitOK
}
