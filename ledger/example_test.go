package ledger_test

import (
	"context"
	"fmt"

	"airlock.dev/airlock/ledger"
)

// The second identical call gets the first one's result; the effect runs
// once.
func Example() {
	l, err := ledger.New(newMem(), nil) // a store.Ledger: store/sqlite, store/postgres or store/redis
	if err != nil {
		panic(err)
	}
	k, err := ledger.KeyFor(ledger.Call{Session: "s1", Step: 4, Tool: "send_email", Args: []byte(`{"to":"ops@example.com"}`)})
	if err != nil {
		panic(err)
	}
	for range 2 {
		result, err := l.Do(context.Background(), k, "gateway-1", func(ctx context.Context, t *ledger.Ticket) ([]byte, error) {
			fmt.Println("sending, retry:", t.Retry)
			return []byte("sent"), nil
		})
		fmt.Println(string(result), err)
	}
	// Output:
	// sending, retry: false
	// sent <nil>
	// sent <nil>
}
