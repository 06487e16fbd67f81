package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"

	"airlock.dev/airlock/redact"
	"airlock.dev/airlock/redact/redacttest"
)

func newRedactor(t testing.TB, opts *redact.Options) *redact.Redactor {
	t.Helper()
	r, err := redact.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkCase reports what the redactor got wrong on one labelled case:
// a marked span not masked with its kind, or a finding outside the marked
// spans.
func checkCase(c redacttest.Case, fs []redact.Finding) []string {
	var bad []string
	for i, sp := range c.Spans {
		ok := false
		for _, f := range fs {
			if f.Start <= sp[0] && f.End >= sp[1] && f.Kind == c.SpanKinds[i] {
				ok = true
			}
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("span %q not masked as %s (findings %v)", c.Text[sp[0]:sp[1]], c.SpanKinds[i], fs))
		}
	}
	for _, f := range fs {
		inside := false
		for _, sp := range c.Spans {
			if f.Start < sp[1] && f.End > sp[0] {
				inside = true
			}
		}
		if !inside {
			bad = append(bad, fmt.Sprintf("false positive %s %q", f.Kind, c.Text[f.Start:f.End]))
		}
	}
	return bad
}

// TestLabelledSet is the recall and false-positive test: every positive of
// every kind is masked with its kind, and no hard negative is touched. It
// runs the set under several seeds, so tokens differ each time.
func TestLabelledSet(t *testing.T) {
	r := newRedactor(t, nil)
	kinds := map[string]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		cases, err := redacttest.Cases(seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			kinds[c.Kind] = true
			out, fs := r.RedactString(c.Text)
			for _, b := range checkCase(c, fs) {
				t.Errorf("seed %d, %s: %s", seed, c.Name, b)
			}
			if c.Kind == "none" && out != c.Text {
				t.Errorf("seed %d, %s: negative changed to %q", seed, c.Name, out)
			}
		}
	}
	// Every kind the rules can report has at least one positive.
	for _, k := range redact.Kinds() {
		if !kinds[k] && !untested[k] {
			t.Errorf("kind %s has no positive case in redacttest/testdata/labelled.txt", k)
		}
	}
}

// untested kinds: formats whose positives would need real issuer output
// (their rules are shape checks like the others).
var untested = map[string]bool{
	"atlassian-token": true, "grafana-token": true, "doppler-token": true, "pulumi-token": true,
	"xai-key": true, "replicate-token": true, "perplexity-key": true, "azure-storage-key": true,
}

// TestMaskNamesKind checks the replacement text and that a finding never
// holds the secret.
func TestMaskNamesKind(t *testing.T) {
	r := newRedactor(t, nil)
	tok := "ghp_" + strings.Repeat("aB3dE5gH7j", 4)[:36]
	out, fs := r.RedactString("x " + tok + " y")
	if got, want := out, "x [REDACTED:github-token] y"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	b, _ := json.Marshal(fs)
	if bytes.Contains(b, []byte(tok)) {
		t.Fatalf("finding JSON holds the secret: %s", b)
	}
	if got, want := string(b), `[{"kind":"github-token","start":2,"end":42}]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestOptions(t *testing.T) {
	text := "mail jane.doe@acme-corp.io, call (415) 555-2671, card 4111 1111 1111 1111"
	for _, c := range []struct {
		disable []string
		want    string
	}{
		{nil, "mail [REDACTED:email], call [REDACTED:phone], card [REDACTED:card-number]"},
		{[]string{"pii"}, text},
		{[]string{"email"}, "mail jane.doe@acme-corp.io, call [REDACTED:phone], card [REDACTED:card-number]"},
		{[]string{"phone", "card-number"}, "mail [REDACTED:email], call (415) 555-2671, card 4111 1111 1111 1111"},
	} {
		r := newRedactor(t, &redact.Options{Disable: c.disable})
		if got, _ := r.RedactString(text); got != c.want {
			t.Errorf("Disable %v: got %q, want %q", c.disable, got, c.want)
		}
	}
	for _, c := range []struct {
		opts *redact.Options
		code redact.Code
	}{
		{&redact.Options{Disable: []string{"emails"}}, redact.CodeInvalidOption},
		{&redact.Options{StreamWindow: 3}, redact.CodeInvalidOption},
		{&redact.Options{Allow: redact.Allowlist{Patterns: []string{"(unclosed"}}}, redact.CodeInvalidAllow},
		{&redact.Options{Allow: redact.Allowlist{Values: make([]string, redact.MaxAllowEntries+1)}}, redact.CodeInvalidAllow},
	} {
		_, err := redact.New(c.opts)
		var e *redact.Error
		if !errors.As(err, &e) || e.Code != c.code || e.Hint == "" || e.Message == "" {
			t.Errorf("New(%+v): got %v, want an *Error %s with a hint", c.opts, err, c.code)
		}
		if !errors.Is(err, &redact.Error{Code: c.code}) {
			t.Errorf("errors.Is by code fails for %v", err)
		}
	}
}

func TestAllowlist(t *testing.T) {
	tok1 := "ghp_" + strings.Repeat("Zq9", 12)
	tok2 := "sk_test_" + strings.Repeat("4eC39HqLyjWDarjtT1zdp7dc", 1)
	text := tok1 + " " + tok2 + " jane.doe@acme-corp.io"
	r := newRedactor(t, &redact.Options{Allow: redact.Allowlist{
		Values:   []string{tok1},
		Patterns: []string{`sk_test_4eC39Hq\w+`},
	}})
	got, _ := r.RedactString(text)
	if want := tok1 + " " + tok2 + " [REDACTED:email]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A pattern must match the whole value, not a part of it.
	r = newRedactor(t, &redact.Options{Allow: redact.Allowlist{Patterns: []string{`ghp_Zq9`}}})
	if got, _ := r.RedactString(tok1); got != "[REDACTED:github-token]" {
		t.Fatalf("a partial pattern allowed the token: %q", got)
	}
}

// TestCardAllowlist: the published test numbers are masked by default in
// every way they are written, and one allowlist entry of digits lets all
// of those through, while other cards stay masked.
func TestCardAllowlist(t *testing.T) {
	def := newRedactor(t, nil)
	allow := newRedactor(t, &redact.Options{Allow: redact.Allowlist{Values: redact.TestCardNumbers}})
	for _, n := range redact.TestCardNumbers {
		for _, text := range cardForms(n) {
			if got, _ := def.RedactString("card " + text + " ok"); got != "card [REDACTED:card-number] ok" {
				t.Errorf("default: %q came out %q", text, got)
			}
			if got, fs := allow.RedactString("card " + text + " ok"); len(fs) > 0 {
				t.Errorf("allowlisted: %q came out %q", text, got)
			}
		}
	}
	// A card that is not on the list stays masked, however it is written.
	for _, text := range cardForms("4539578763621486") {
		if got, _ := allow.RedactString(text); got != "[REDACTED:card-number]" {
			t.Errorf("a real-looking card %q came out %q with test numbers allowed", text, got)
		}
	}
	// A pattern sees the digits too.
	p := newRedactor(t, &redact.Options{Allow: redact.Allowlist{Patterns: []string{`4242(?:4242){3}`}}})
	if _, fs := p.RedactString("4242-4242-4242-4242"); len(fs) > 0 {
		t.Errorf("a pattern over the digits did not allow the dashed form: %v", fs)
	}
}

// cardForms is a card number bare, grouped with spaces and with dashes the
// way it is printed: 4-6-5 for 15 digits, 4-6-4 for 14, fours otherwise.
func cardForms(n string) []string {
	var groups []int
	switch len(n) {
	case 15:
		groups = []int{4, 6, 5}
	case 14:
		groups = []int{4, 6, 4}
	case 13:
		return []string{n} // printed in one run
	default:
		for r := len(n); r > 0; r -= 4 {
			groups = append(groups, min(4, r))
		}
	}
	var parts []string
	pos := 0
	for _, g := range groups {
		parts = append(parts, n[pos:pos+g])
		pos += g
	}
	return []string{n, strings.Join(parts, " "), strings.Join(parts, "-")}
}

// secrets straddling a stream boundary, one of each shape: a fixed-length
// token, a line rule, a URL password, a multi-line private key, an AWS
// secret key on the line after its key id or before it, a command line, an
// XML element and a braced ODBC value.
func splitSecrets(t *testing.T) []redacttest.Case {
	cases, err := redacttest.Cases(7)
	if err != nil {
		t.Fatal(err)
	}
	var out []redacttest.Case
	for _, c := range cases {
		name, _, _ := strings.Cut(c.Name, "#")
		switch name {
		case "env", "postgres", "rsa", "json-escaped", "aws-secret-key", "jwt", "yaml", "mongodb", "env-secret", "openssh",
			"aws-prose/next-line", "aws-prose/secret-first", "cli/sshpass", "markup/cdata", "connstr/odbc-braced":
			out = append(out, c)
		}
	}
	if len(out) != 16 {
		t.Fatalf("found %d of the split cases; did labelled.txt change?", len(out))
	}
	return out
}

// TestStreamEveryCut places each secret so that Stream's first cut falls at
// every byte offset inside it, and checks the output against one pass.
func TestStreamEveryCut(t *testing.T) {
	const window = 64
	r := newRedactor(t, &redact.Options{StreamWindow: window})
	for _, c := range splitSecrets(t) {
		// Stream's first cut is at window bytes plus its lookback.
		firstCut := window + redact.StreamLookback
		for split := 0; split <= len(c.Text); split++ {
			pad := firstCut - split
			text := strings.Repeat("lorem ipsum\n", pad/12+1)[:pad] + c.Text + "\nthe end\n"
			want, _ := r.RedactString(text)
			var got bytes.Buffer
			if err := r.Stream(&got, iotest.OneByteReader(strings.NewReader(text))); err != nil {
				t.Fatal(err)
			}
			if got.String() != want {
				t.Fatalf("%s split at %d:\ngot  %q\nwant %q", c.Name, split, got.String(), want)
			}
			if strings.Contains(got.String(), c.Text[c.Spans[0][0]:c.Spans[0][1]]) {
				t.Fatalf("%s split at %d: the secret is in the output", c.Name, split)
			}
		}
	}
}

// TestStreamCorpus streams a generated corpus with several windows and
// compares with one pass, findings and offsets included.
func TestStreamCorpus(t *testing.T) {
	text, planted, err := redacttest.Corpus(256<<10, 42, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, window := range []int{1000, 4096, 0} {
		r := newRedactor(t, &redact.Options{StreamWindow: window})
		want, wantFs := r.Redact(text)
		var got bytes.Buffer
		var gotFs []redact.Finding
		err := r.StreamFindings(&got, iotest.HalfReader(bytes.NewReader(text)), func(f redact.Finding) { gotFs = append(gotFs, f) })
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("window %d: stream and one pass differ", window)
		}
		if fmt.Sprint(gotFs) != fmt.Sprint(wantFs) {
			t.Fatalf("window %d: findings differ:\n%v\n%v", window, gotFs, wantFs)
		}
	}
	// Recall over the corpus: every planted secret is masked.
	r := newRedactor(t, nil)
	fs := r.Find(text)
	missed := 0
	j := 0
	for _, p := range planted {
		for j < len(fs) && fs[j].End <= p.Start {
			j++
		}
		if j == len(fs) || fs[j].Start > p.Start || fs[j].End < p.End {
			missed++
			t.Errorf("planted %s at %d not masked", p.Kind, p.Start)
		}
	}
	t.Logf("%d planted, %d missed, %d findings", len(planted), missed, len(fs))
}

type failWriter struct{ err error }

// stuckReader returns no bytes and no error, forever.
type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestStreamErrors(t *testing.T) {
	r := newRedactor(t, nil)
	boom := errors.New("boom")
	if err := r.Stream(failWriter{boom}, strings.NewReader("x")); !errors.Is(err, boom) {
		t.Fatalf("write error: got %v", err)
	}
	if err := r.Stream(&bytes.Buffer{}, iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Fatalf("read error: got %v", err)
	}
	if err := r.Stream(&bytes.Buffer{}, stuckReader{}); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("a reader that never progresses: got %v", err)
	}
	var out bytes.Buffer
	if err := r.Stream(&out, strings.NewReader("")); err != nil || out.Len() != 0 {
		t.Fatalf("empty input: %v %q", err, out.String())
	}
}

func TestSecret(t *testing.T) {
	s := redact.Secret("hunter2")
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "pw", s)
	j, err := json.Marshal(struct{ P redact.Secret }{s})
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range []string{
		s.String(), fmt.Sprint(s), fmt.Sprintf("%s %v %q %x %X %#v %+v %10s %d", s, s, s, s, s, s, s, s, s),
		fmt.Sprintf("%v", struct{ P redact.Secret }{s}), fmt.Sprintf("%#v", []redact.Secret{s}),
		logged.String(), string(j),
	} {
		if strings.Contains(got, "hunter2") || !strings.Contains(got, redact.SecretMask) {
			t.Errorf("leaked or unmasked: %q", got)
		}
	}
	var back struct{ P redact.Secret }
	if err := json.Unmarshal([]byte(`{"P":"hunter2"}`), &back); err != nil || back.P.Reveal() != "hunter2" {
		t.Fatalf("UnmarshalJSON: %v %q", err, back.P.Reveal())
	}
}

func TestScanEnv(t *testing.T) {
	r := newRedactor(t, nil)
	env := []string{
		"HOME=/root",
		"PATH=/usr/bin:/bin",
		"GITHUB_TOKEN=ghp_" + strings.Repeat("aB3dE5gH7j", 4)[:36],
		"DB_PASSWORD=Tr0ub4dor&3",
		"MY_CUSTOM_VAR=postgres://app:pw9XkQ2@db/app",
		"SSH_AUTH_SOCK=/tmp/ssh-XXXX/agent.1",
		"API_KEY=",
		"SECRET_KEY=changeme",
		"EDITOR=vim",
		"CONTACT=jane.doe@acme-corp.io",
		"BROKEN",
		// Secret words only as whole words: none of these is one.
		"LD_LIBRARY_PATH=/usr/local/lib",
		"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH=/etc/ssl/roots.pem",
		"XKB_KEYMAP=us",
		"KEYTIMEOUT=1",
		// ... and these are.
		"GITLAB_PAT=x7Hq2Lm9Zp4Rt8Vw",
		"signing.key=k3Jd8sLq0ZxV",
		"SENTRY_DSN=sentry-dsn-value-1",
		"DBPASSWORD=n0tTh3Default",
	}
	got := r.ScanEnv(env)
	want := []redact.EnvFinding{
		{Name: "GITHUB_TOKEN", Kind: "github-token"},
		{Name: "DB_PASSWORD", Kind: "secret-name"},
		{Name: "MY_CUSTOM_VAR", Kind: "url-credential"},
		{Name: "GITLAB_PAT", Kind: "secret-name"},
		{Name: "signing.key", Kind: "secret-name"},
		{Name: "SENTRY_DSN", Kind: "secret-name"},
		{Name: "DBPASSWORD", Kind: "secret-name"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestKinds(t *testing.T) {
	ks := redact.Kinds()
	seen := map[string]bool{}
	for _, k := range ks {
		if seen[k] {
			t.Errorf("kind %s listed twice", k)
		}
		seen[k] = true
	}
	for _, k := range append(redact.PIIKinds, "github-token", "private-key", "url-credential", "password") {
		if !seen[k] {
			t.Errorf("Kinds() lacks %s", k)
		}
	}
}

func ExampleRedactor_RedactString() {
	r, _ := redact.New(nil)
	out, findings := r.RedactString("DATABASE_URL=postgres://app:s3cr3tPw9@db:5432/app")
	fmt.Println(out)
	fmt.Println(findings)
	// Output:
	// DATABASE_URL=postgres://app:[REDACTED:url-credential]@db:5432/app
	// [{url-credential 28 37}]
}
