package redact_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"airlock.dev/airlock/redact"
)

func TestHandlerMasksLogs(t *testing.T) {
	rd, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := "postgres://app:" + "Hunter2Secret" + "@db.internal:5432/prod"
	var buf bytes.Buffer
	log := slog.New(redact.NewHandler(slog.NewTextHandler(&buf, nil), rd))
	log.With("dsn", secret).WithGroup("req").Info("connecting to "+secret,
		"url", secret, slog.Group("inner", "v", secret), "err", errors.New("dial "+secret+": refused"), "n", 3)
	out := buf.String()
	if strings.Contains(out, "Hunter2Secret") {
		t.Fatalf("the password reached the log:\n%s", out)
	}
	if strings.Count(out, "[REDACTED:") < 5 || !strings.Contains(out, "req.n=3") {
		t.Fatalf("want every string masked and other values kept:\n%s", out)
	}
}
