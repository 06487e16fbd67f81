// Package storeurl opens airlock's store from one URL, whichever backend it
// names, so that a command-line flag or a config value is all it takes:
//
//	sqlite:PATH                      the embedded file (sqlite:.airlock/airlock.db, sqlite:///var/lib/airlock/airlock.db)
//	postgres://user@host:port/db     Postgres (also postgresql://); ?schema=NAME picks the schema
//	redis://host:port/db             Redis (also rediss:// for TLS); ?prefix=P picks the key prefix
//
// It is the one package that imports all three drivers; the core packages
// (store, ledger, gate) import none of them.
//
//	db, err := storeurl.Open(ctx, "sqlite:.airlock/airlock.db")
//	if err != nil {
//		return err
//	}
//	defer db.Close()
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"airlock.dev/airlock/store"
	"airlock.dev/airlock/store/postgres"
	"airlock.dev/airlock/store/redis"
	"airlock.dev/airlock/store/sqlite"
)

// Kind names a backend.
type Kind string

const (
	SQLite   Kind = "sqlite"
	Postgres Kind = "postgres"
	Redis    Kind = "redis"
)

// MaxURL bounds the bytes of a store URL.
const MaxURL = 4096

// Location is a parsed store URL.
type Location struct {
	Kind Kind
	// Path is the SQLite file; URL is what the Postgres or Redis driver
	// is given.
	Path string
	URL  string
}

// hint is the repair every refusal offers.
const hint = "use sqlite:PATH, postgres://user@host:port/database or redis://host:port/db"

// Parse reads a store URL without opening anything.
func Parse(raw string) (Location, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("storeurl: %s; %s", fmt.Sprintf(format, args...), hint)
	}
	switch {
	case raw == "":
		return Location{}, fail("the store URL is empty")
	case len(raw) > MaxURL:
		return Location{}, fail("the store URL is %d bytes, past storeurl.MaxURL (%d)", len(raw), MaxURL)
	case strings.ContainsAny(raw, "\x00\n\r"):
		return Location{}, fail("the store URL holds a NUL or line break")
	}
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok {
		return Location{}, fail("%q names no backend", raw)
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3":
		path := rest
		if strings.HasPrefix(rest, "//") {
			u, err := url.Parse(raw)
			if err != nil {
				return Location{}, fail("%v", err)
			}
			if u.Host != "" && u.Host != "localhost" {
				return Location{}, fail("an SQLite file is local; %q names host %q", raw, u.Host)
			}
			path = u.Path
		}
		if path == "" {
			return Location{}, fail("sqlite: names no file")
		}
		return Location{Kind: SQLite, Path: path}, nil
	case "postgres", "postgresql":
		if _, err := url.Parse(raw); err != nil {
			return Location{}, fail("%v", err)
		}
		return Location{Kind: Postgres, URL: raw}, nil
	case "redis", "rediss":
		if _, err := url.Parse(raw); err != nil {
			return Location{}, fail("%v", err)
		}
		return Location{Kind: Redis, URL: raw}, nil
	}
	return Location{}, fail("unknown backend %q", scheme)
}

// Open parses raw and opens the backend it names, migrating its schema
// when it needs it.
func Open(ctx context.Context, raw string) (store.Backend, error) {
	loc, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	// Each case returns its own nil on failure: a nil *DB in a
	// store.Backend would not compare equal to nil.
	switch loc.Kind {
	case SQLite:
		db, err := sqlite.Open(loc.Path, nil)
		if err != nil {
			return nil, err
		}
		return db, nil
	case Postgres:
		db, err := postgres.Open(ctx, loc.URL, nil)
		if err != nil {
			return nil, err
		}
		return db, nil
	case Redis:
		db, err := redis.Open(ctx, loc.URL, nil)
		if err != nil {
			return nil, err
		}
		return db, nil
	}
	return nil, errors.New("storeurl: unreachable")
}
