package storeurl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/postgres"
	"airlock.dev/airlock/store/redis"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Location
	}{
		{"sqlite:.airlock/airlock.db", Location{Kind: SQLite, Path: ".airlock/airlock.db"}},
		{"sqlite:/var/lib/a.db", Location{Kind: SQLite, Path: "/var/lib/a.db"}},
		{"sqlite:///var/lib/a.db", Location{Kind: SQLite, Path: "/var/lib/a.db"}},
		{"sqlite://localhost/var/lib/a.db", Location{Kind: SQLite, Path: "/var/lib/a.db"}},
		{"SQLite:a.db", Location{Kind: SQLite, Path: "a.db"}},
		{"postgres://u@h:5432/db?schema=x", Location{Kind: Postgres, URL: "postgres://u@h:5432/db?schema=x"}},
		{"postgresql://h/db", Location{Kind: Postgres, URL: "postgresql://h/db"}},
		{"redis://h:6379/0", Location{Kind: Redis, URL: "redis://h:6379/0"}},
		{"rediss://h:6380/1?prefix=a:", Location{Kind: Redis, URL: "rediss://h:6380/1?prefix=a:"}},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{
		"", "airlock.db", "sqlite:", "sqlite://otherhost/a.db", "mysql://h/db", "file:a.db",
		"postgres://h/%zz", "sqlite:a\x00b", "redis://h\n", strings.Repeat("x", MaxURL+1),
	} {
		if got, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %+v; want an error", bad, got)
		} else if !strings.Contains(err.Error(), "sqlite:PATH") {
			t.Errorf("Parse(%q) err = %v; want the forms as a hint", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"sqlite:a.db", "sqlite:///a", "postgres://u@h/db?schema=s", "redis://h:1/0", "x:y", ":", "sqlite://h%zz/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := Parse(s)
		if err != nil {
			return
		}
		switch loc.Kind {
		case SQLite:
			if loc.Path == "" || loc.URL != "" {
				t.Errorf("Parse(%q) = %+v: an SQLite location needs a path and no URL", s, loc)
			}
		case Postgres, Redis:
			if loc.URL != s || loc.Path != "" {
				t.Errorf("Parse(%q) = %+v: want the URL as given", s, loc)
			}
		default:
			t.Errorf("Parse(%q) = kind %q", s, loc.Kind)
		}
	})
}

func random() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// TestOpen opens each backend from its URL, writes through the
// store.Backend, reads back, and removes what it made. The servers must be
// up (scripts/start-services.sh); the test fails, never skips, without them.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	id := random()
	for _, tc := range []struct {
		name, url string
		cleanup   func(store.Backend) error
	}{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "state", "airlock.db"), func(b store.Backend) error { return b.Close() }},
		{"postgres", env("AIRLOCK_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable") + "&schema=airlock_test_url_" + id,
			func(b store.Backend) error { return b.(*postgres.DB).DropSchema(ctx) }},
		{"redis", env("AIRLOCK_TEST_REDIS", "redis://127.0.0.1:6379/0") + "?prefix=airlock-test-url-" + id + ":",
			func(b store.Backend) error { return b.(*redis.DB).DeleteAll(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Open(ctx, tc.url)
			if err != nil {
				t.Fatalf("Open(%s): %v\nstart the servers with scripts/start-services.sh", tc.name, err)
			}
			defer func() {
				if err := tc.cleanup(b); err != nil {
					t.Error(err)
				}
			}()
			now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
			if _, err := b.ChargeSession(ctx, "s", store.Charge{Steps: 1}, now); err != nil {
				t.Fatal(err)
			}
			if s, err := b.Session(ctx, "s"); err != nil || s.Step != 1 {
				t.Errorf("Session = %+v, %v", s, err)
			}
		})
	}
	if b, err := Open(ctx, "sqlite:"+t.TempDir()); err == nil || b != nil {
		t.Errorf("opening a directory as SQLite = %v, %v; want a nil Backend and an error", b, err)
	}
}
