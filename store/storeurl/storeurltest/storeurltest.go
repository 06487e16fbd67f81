// Package storeurltest gives tests the three store backends by URL, each
// in a namespace of its own (a SQLite file in a temporary directory, a
// Postgres schema, a Redis key prefix) that is removed when the test ends.
// The servers must be up (scripts/start-services.sh); a test fails, never
// skips, without them. AIRLOCK_TEST_POSTGRES and AIRLOCK_TEST_REDIS name
// other servers.
package storeurltest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/postgres"
	"airlock.dev/airlock/store/redis"
	"airlock.dev/airlock/store/storeurl"
)

// Backend is one store to test against.
type Backend struct {
	Name string // "sqlite", "postgres", "redis"
	URL  string
}

// Backends returns the three backends, their namespaces named after tag
// and a random id, so that parallel runs never meet.
func Backends(t testing.TB, tag string) []Backend {
	var b [6]byte
	rand.Read(b[:])
	id := tag + "_" + hex.EncodeToString(b[:])
	return []Backend{
		{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "airlock.db")},
		{"postgres", env("AIRLOCK_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable") + "&schema=airlock_test_" + id},
		{"redis", env("AIRLOCK_TEST_REDIS", "redis://127.0.0.1:6379/0") + "?prefix=airlock-test-" + id + ":"},
	}
}

// Open opens b and removes its namespace (and closes it) when the test
// ends.
func Open(t testing.TB, b Backend) store.Backend {
	t.Helper()
	ctx := context.Background()
	s, err := storeurl.Open(ctx, b.URL)
	if err != nil {
		t.Fatalf("opening the %s store: %v\nstart the servers with scripts/start-services.sh", b.Name, err)
	}
	t.Cleanup(func() {
		var err error
		switch db := s.(type) {
		case *postgres.DB:
			err = db.DropSchema(ctx) // and closes it
		case *redis.DB:
			err = db.DeleteAll(ctx) // and closes it
		default:
			err = s.Close()
		}
		if err != nil {
			t.Errorf("removing the %s test namespace: %v", b.Name, err)
		}
	})
	return s
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
