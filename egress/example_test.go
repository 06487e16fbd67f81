package egress_test

import (
	"context"
	"errors"
	"fmt"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/tool"
)

// Check judges a URL without fetching it; a refusal is an error value
// with a code, a message and a hint.
func ExampleClient_Check() {
	c, err := egress.NewClient(nil) // defaults: public hosts on ports 80 and 443
	if err != nil {
		panic(err)
	}
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://0x7f.1/",
		"http://a.com#@b.com/",
		"https://93.184.216.34/",
	} {
		var te *tool.Error
		if err := c.Check(context.Background(), u); errors.As(err, &te) {
			fmt.Printf("%s\n  %s: %s\n", u, te.Code, te.Message)
			continue
		}
		fmt.Printf("%s\n  allowed\n", u)
	}
	// Output:
	// http://169.254.169.254/latest/meta-data/
	//   egress_denied: 169.254.169.254 is the cloud metadata address (link-local); only public hosts on ports 80 and 443 are allowed
	// http://0x7f.1/
	//   egress_invalid_url: the host "0x7f.1" is a non-canonical IPv4 form (hexadecimal); write the address as four decimal numbers, as in 93.184.216.34
	// http://a.com#@b.com/
	//   egress_invalid_url: the URL carries user information (user@host) or an @ before its path, which parsers read differently
	// https://93.184.216.34/
	//   allowed
}
