package runtime

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ApprovalKeyFile is where, under the user's config directory, the key
// approvals are keyed with lives: outside every workspace, so that a state
// file shipped in one cannot hold approvals that match.
const ApprovalKeyFile = "airlock/approval.key"

// ApprovalKeySize is the size of the approval key, in bytes.
const ApprovalKeySize = 32

// ApprovalKeyPath is the approval key's path in the user's config
// directory ($XDG_CONFIG_HOME, usually ~/.config).
func ApprovalKeyPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("approval key: no config directory (set XDG_CONFIG_HOME): %w", err)
	}
	return filepath.Join(dir, ApprovalKeyFile), nil
}

// LoadApprovalKey loads the approval key at path (ApprovalKeyPath() when
// ""), creating it (ApprovalKeySize random bytes, mode 0600) on first use.
// Processes that start together may all find no key: each writes a whole
// key to a temporary file beside it and links that into place. Only the
// first link succeeds; every other process reads the key it put there. So
// no process ever reads a key file that is not yet written, and no key
// that a process may already be using is ever replaced (a rename would
// replace it: the last writer would win).
func LoadApprovalKey(path string) ([]byte, error) {
	if path == "" {
		var err error
		if path, err = ApprovalKeyPath(); err != nil {
			return nil, err
		}
	}
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
	case len(key) != ApprovalKeySize:
		return nil, fmt.Errorf("approval key %s: %d bytes, want %d; remove it to make a new one", path, len(key), ApprovalKeySize)
	}
	return key, nil
}

// linkNewApprovalKey writes a new key to a temporary file in path's
// directory, makes it durable, and links it to path unless a key is there
// already (another process won): either way path then holds a whole key.
func linkNewApprovalKey(path string) error {
	fail := func(err error) error {
		return fmt.Errorf("approval key %s: %w; or make one yourself: head -c %d /dev/urandom > %s && chmod 600 %s",
			path, err, ApprovalKeySize, path, path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".approval.key.*") // mode 0600
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name())
	key := make([]byte, ApprovalKeySize)
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
