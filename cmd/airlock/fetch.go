package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"airlock.dev/airlock/plural"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/tool"
)

// pinFlag collects --resolve HOST:IP[,IP...] flags into pins.
type pinFlag struct{ pins egress.Pins }

func (f pinFlag) String() string     { return "" }
func (f pinFlag) Set(s string) error { return f.pins.ParsePin(s) }

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// egressOptions returns web_fetch's egress options: the defaults, with
// the pinned names resolved from the pins.
func egressOptions(pins egress.Pins) *egress.Options {
	if len(pins) == 0 {
		return nil
	}
	return &egress.Options{Resolver: pins.Resolver(nil)}
}

// fetchOutput is airlock fetch --json's object for a fetched resource.
type fetchOutput struct {
	URL         string `json:"url"` // the final URL, after redirects
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        string `json:"body"`
	Truncated   bool   `json:"truncated"`
}

// fetchRefusal is airlock fetch --json's object for a refusal.
type fetchRefusal struct {
	Error *tool.Error `json:"error"`
}

func runFetch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fetch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object: url, status, content_type, body, truncated (or error)")
	pins := egress.Pins{}
	fs.Var(pinFlag{pins}, "resolve", "pin a host name's addresses, as `HOST:IP[,IP...]` (repeatable); other names use the system resolver")
	var hosts, ports listFlag
	fs.Var(&hosts, "allow-host", "reach only this `HOST` (repeatable; *.example.com for subdomains); an IP address named here may be a non-public one, such as a local server's")
	fs.Var(&ports, "allow-port", "allow this `PORT` besides 80 and 443 (repeatable)")
	maxBytes := fs.Int64("max-bytes", egress.DefaultMaxBodyBytes, "most body `BYTES` to print; a longer body is cut and marked truncated")
	creds := fs.String("credentials", "", "a credentials `FILE` (mode 600) of headers to attach per exact host; they are masked in the output")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock fetch [flags] URL\n\nPerforms one guarded GET under the egress policy (public hosts on ports 80 and 443\nby default; every resolved address and redirect checked) and prints the body.\n\nflags:")
		fs.PrintDefaults()
	}
	rest, err := interleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(rest) != 1 {
		fs.Usage()
		return exitUsage
	}
	opts := &egress.Options{MaxBodyBytes: *maxBytes}
	if len(pins) > 0 {
		opts.Resolver = pins.Resolver(nil)
	}
	opts.AllowHosts = hosts
	for _, h := range hosts {
		if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
			opts.AllowAddrs = append(opts.AllowAddrs, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	if len(ports) > 0 {
		opts.Ports = append(opts.Ports, egress.DefaultPorts...)
		for _, p := range ports {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return misused(stderr, "fetch", fmt.Errorf("--allow-port %q: want a port number 1-65535", p))
			}
			opts.Ports = append(opts.Ports, n)
		}
	}
	if *creds != "" {
		if opts.Credentials, err = egress.LoadCredentials(*creds, nil); err != nil {
			return refused(stderr, "fetch", err)
		}
	}
	c, err := egress.NewClient(opts)
	if err != nil {
		return misused(stderr, "fetch", err)
	}
	resp, err := c.Fetch(ctx, rest[0], nil)
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		if *asJSON {
			writeJSONLine(stdout, fetchRefusal{te})
		} else {
			fmt.Fprintf(stderr, "airlock fetch: %s: %s. Hint: %s\n", te.Code, te.Message, te.Hint)
		}
		return exitRefused
	case err != nil:
		return refused(stderr, "fetch", err)
	}
	if *asJSON {
		writeJSONLine(stdout, fetchOutput{URL: resp.URL, Status: resp.Status, ContentType: resp.ContentType, Body: resp.Body, Truncated: resp.Truncated})
		return exitOK
	}
	io.WriteString(stdout, resp.Body)
	note := ""
	if resp.Truncated {
		note = ", truncated"
	}
	fmt.Fprintf(stderr, "%s: status %d, %s, %s%s\n", resp.URL, resp.Status, resp.ContentType, plural.Count(len(resp.Body), "byte", "bytes"), note)
	return exitOK
}

func writeJSONLine(w io.Writer, v any) {
	line, _ := json.Marshal(v) // plain strings and numbers always marshal
	fmt.Fprintf(w, "%s\n", line)
}
