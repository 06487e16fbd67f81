//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"errors"
	"os"
	"syscall"
)

// writersApart: the lock keeps writers apart here, so that several may
// append to one log.
const writersApart = true

// lockFile takes the exclusive advisory lock (flock) on the open log,
// which every writer holds around each append and head update, so that
// no two of them chain onto the same record. With wait it blocks until
// the lock is free; without, ErrLocked says another writer holds it. The
// lock goes with the open file description: two Logs in one process
// exclude each other as two processes do.
func lockFile(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	err := flock(f, how)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// unlockFile lets the lock go.
func unlockFile(f *os.File) error { return flock(f, syscall.LOCK_UN) }

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how)
			if ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
