package storeurl_test

import (
	"fmt"

	"airlock.dev/airlock/store/storeurl"
)

func ExampleParse() {
	for _, u := range []string{"sqlite:.airlock/airlock.db", "postgres://airlock@db:5432/airlock?schema=prod", "redis://cache:6379/2", "mysql://db/airlock"} {
		loc, err := storeurl.Parse(u)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(loc.Kind, loc.Path+loc.URL)
	}
	// Output:
	// sqlite .airlock/airlock.db
	// postgres postgres://airlock@db:5432/airlock?schema=prod
	// redis redis://cache:6379/2
	// error: storeurl: unknown backend "mysql"; use sqlite:PATH, postgres://user@host:port/database or redis://host:port/db
}
