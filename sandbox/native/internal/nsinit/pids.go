package nsinit

import (
	"fmt"
	"strconv"
	"syscall"
)

// The command's pids cgroup sits below the init's, and only the command's
// tree is in it: so Limits.Pids bounds the command and all it starts,
// counting the command itself, however many threads the init's runtime
// holds (those count against the init's own allowance above it). A child
// is born in the cgroup of the thread that forks it, and cgroups move
// single threads (cgroup v1's tasks, v2's cgroup.threads in a threaded
// subtree): so the init's forking thread, this one, steps into the
// command's cgroup for the fork and back out after it. It cannot open
// the cgroup files from inside the sandbox; the parent opened them for it
// (PidsEnterFD, PidsMaxFD, PidsLeaveFD), and the kernel checks a write to
// them against the opener's credentials.
//
// While the thread is inside it takes one of the command's slots, so the
// parent sets the command's pids.max one higher and leaveCommandCgroup
// lowers it to the limit before the thread leaves: the command's tree
// never has more than the limit, and a limit of 1 still lets the command
// itself start.

// enterCommandCgroup moves the calling thread into the command's cgroup.
func enterCommandCgroup() error {
	// "0" names the writing thread itself.
	if err := writeFD(PidsEnterFD, "0"); err != nil {
		return fmt.Errorf("moving the forking thread into the command's pids cgroup: %w", err)
	}
	return nil
}

// leaveCommandCgroup sets the command's cgroup's pids.max to limit and
// moves the calling thread back to the init's cgroup; it closes the
// descriptors, which the command never gets (they are close-on-exec).
func leaveCommandCgroup(limit int) error {
	defer func() {
		for _, fd := range []int{PidsEnterFD, PidsMaxFD, PidsLeaveFD} {
			syscall.Close(fd)
		}
	}()
	if err := writeFD(PidsMaxFD, strconv.Itoa(limit)); err != nil {
		return fmt.Errorf("setting the command's pids.max to %d: %w", limit, err)
	}
	if err := writeFD(PidsLeaveFD, "0"); err != nil {
		return fmt.Errorf("moving the forking thread back into the init's pids cgroup: %w", err)
	}
	return nil
}

func writeFD(fd int, v string) error {
	for {
		_, err := syscall.Write(fd, []byte(v))
		if err != syscall.EINTR {
			return err
		}
	}
}
