package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"strings"

	"airlock.dev/airlock/tool"
)

// WriteResult describes a file just written.
type WriteResult struct {
	Path         string // canonical path
	Bytes        int    // size of the file now
	Replacements int    // replacements EditFile made; 0 for WriteFile
	SHA256       string // hex SHA-256 of the file now
	Created      bool   // the file did not exist before
}

// WriteFile writes content to a file, creating it and its parent
// directories if needed, or replacing it atomically (a temporary file
// beside it, renamed over it; an existing file keeps its permissions).
// Before anything changes, the previous state is snapshotted under the
// session, for Rollback. Content over MaxWriteBytes, or an existing file
// over MaxWriteBytes (it could not be snapshotted), is file_too_large.
func (w *Workspace) WriteFile(session, p, content string) (WriteResult, error) {
	if err := checkSession(session); err != nil {
		return WriteResult{}, err
	}
	if len(content) > w.opts.MaxWriteBytes {
		return WriteResult{}, tool.Errorf(tool.CodeFileTooLarge, "Write the file in smaller parts, or change it with edit_file",
			"the content is %d bytes, more than %d (MaxWriteBytes)", len(content), w.opts.MaxWriteBytes)
	}
	canon, err := w.Resolve(p)
	if err != nil {
		return WriteResult{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	before, err := w.prior(canon)
	if err != nil {
		return WriteResult{}, err
	}
	return w.commit(session, canon, before, []byte(content), 0)
}

// EditFile replaces old with new in an existing file: old must occur
// exactly once (edit_no_match for none, edit_ambiguous for several), or,
// with all, at least once, and every occurrence is replaced. The match is
// exact, byte for byte. The file is snapshotted and replaced as by
// WriteFile, and the result must fit MaxWriteBytes.
func (w *Workspace) EditFile(session, p, old, new string, all bool) (WriteResult, error) {
	if err := checkSession(session); err != nil {
		return WriteResult{}, err
	}
	if old == "" {
		return WriteResult{}, tool.Errorf(tool.CodeInvalidCall, "Give old as the exact text to replace; use write_file to write a whole file",
			"old is empty")
	}
	canon, err := w.Resolve(p)
	if err != nil {
		return WriteResult{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	before, err := w.prior(canon)
	if err != nil {
		return WriteResult{}, err
	}
	if !before.existed {
		return WriteResult{}, tool.Errorf(tool.CodeNotFound, "Check the path with list_dir or glob; use write_file to create a file",
			"%q does not exist", canon)
	}
	text := string(before.content)
	n := strings.Count(text, old)
	switch {
	case n == 0:
		return WriteResult{}, tool.Errorf(tool.CodeEditNoMatch, "Read the file and copy old exactly, including white space and line breaks",
			"old does not occur in %q", canon)
	case n > 1 && !all:
		return WriteResult{}, tool.Errorf(tool.CodeEditAmbiguous, "Add surrounding text to old so that it occurs once, or set replace_all",
			"old occurs %d times in %q", n, canon)
	}
	// The new size, computed before building it, so that a huge result is
	// never allocated.
	size, grow := len(text), len(new)-len(old)
	if grow > 0 && n > (w.opts.MaxWriteBytes-size)/grow {
		return WriteResult{}, tool.Errorf(tool.CodeFileTooLarge, "Replace less, or write the file in smaller parts",
			"the edited file would be over %d bytes (MaxWriteBytes)", w.opts.MaxWriteBytes)
	}
	if !all {
		n = 1
	}
	edited := strings.Replace(text, old, new, n)
	return w.commit(session, canon, before, []byte(edited), n)
}

// priorState is a file's state before a change.
type priorState struct {
	existed     bool
	mode        fs.FileMode
	content     []byte
	missingDirs []string // canonical paths of parent directories to create, outermost first
}

// prior reads the state of the file at canon before a change.
func (w *Workspace) prior(canon string) (priorState, error) {
	if canon == "." {
		return priorState{}, tool.Errorf(tool.CodeNotAFile, hintNotFile, "%q is the workspace root, a directory", canon)
	}
	var st priorState
	// Walk the parents, noting the first missing one.
	cur, err := w.openDir(".", false)
	if err != nil {
		return st, err
	}
	parts := strings.Split(canon, "/")
	for i, c := range parts[:len(parts)-1] {
		next, err := openChildDir(cur, c)
		cur.Close()
		if errors.Is(err, fs.ErrNotExist) {
			for j := i; j < len(parts)-1; j++ {
				st.missingDirs = append(st.missingDirs, strings.Join(parts[:j+1], "/"))
			}
			return st, nil
		}
		if err != nil {
			at := strings.Join(parts[:i+1], "/")
			if isErrno(err, errNotDir) {
				return st, tool.Errorf(tool.CodeNotADirectory, hintNotDir, "%q is not a directory", at)
			}
			return st, w.useError(at, err)
		}
		cur = next
	}
	defer cur.Close()
	name := parts[len(parts)-1]
	fi, err := cur.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, w.fsError(canon, err)
	}
	if fi.Size() > int64(w.opts.MaxWriteBytes) && fi.Mode().IsRegular() {
		return st, tool.Errorf(tool.CodeFileTooLarge, "Change a file this large some other way; the file tools change files up to MaxWriteBytes",
			"%q is %d bytes, more than the file tools change (%d, MaxWriteBytes)", canon, fi.Size(), w.opts.MaxWriteBytes)
	}
	f, fi, err := openRegular(cur, name)
	if err != nil {
		return st, w.useError(canon, err)
	}
	defer f.Close()
	st.content, err = io.ReadAll(io.LimitReader(f, int64(w.opts.MaxWriteBytes)+1))
	if err != nil {
		return st, w.fsError(canon, err)
	}
	if len(st.content) > w.opts.MaxWriteBytes {
		return st, tool.Errorf(tool.CodeFileTooLarge, "Change a file this large some other way; the file tools change files up to MaxWriteBytes",
			"%q is more than the file tools change (%d bytes, MaxWriteBytes)", canon, w.opts.MaxWriteBytes)
	}
	st.existed, st.mode = true, fi.Mode()
	return st, nil
}

// commit snapshots the state before the change (each directory to be
// created, then the file), then makes the change. The caller holds w.mu.
func (w *Workspace) commit(session, canon string, before priorState, data []byte, replacements int) (WriteResult, error) {
	for _, dir := range before.missingDirs {
		if _, err := w.snapshot(session, snapshotHeader{Path: dir, Kind: kindDir}, nil); err != nil {
			return WriteResult{}, err
		}
	}
	sum := sha256.Sum256(data)
	h := snapshotHeader{Path: canon, Kind: kindFile, Existed: before.existed, Mode: uint32(before.mode.Perm()),
		After: hex.EncodeToString(sum[:])}
	if _, err := w.snapshot(session, h, before.content); err != nil {
		return WriteResult{}, err
	}
	d, err := w.openDir(dirOf(canon), true)
	if err != nil {
		return WriteResult{}, err
	}
	defer d.Close()
	if err := replaceFile(d, baseOf(canon), data, before.mode, before.existed); err != nil {
		return WriteResult{}, w.fsError(canon, err)
	}
	return WriteResult{
		Path:         canon,
		Bytes:        len(data),
		Replacements: replacements,
		SHA256:       h.After,
		Created:      !before.existed,
	}, nil
}
