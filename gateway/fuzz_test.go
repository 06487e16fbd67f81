package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// FuzzParseConfig: no config file makes ParseConfig panic, and one it
// accepts passes Check again unchanged and survives Marshal and a parse
// of that.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"version: 1\nservers:\n  a:\n    command: x\n",
		"version: 1\nseparator: '-'\nservers:\n  web:\n    url: https://h/mcp\n    headers: {X: y}\n    timeout: 2s\n",
		"version: 1\nservers:\n  a:\n    command: x\n    env: {K: v}\n    tools:\n      t: {risk: high, effect: external, class: send, hide: true}\n",
		`{"version":1,"servers":{"a":{"url":"http://127.0.0.1:1/mcp"}}}`,
		"version: 2\n", "", "servers: [", "version: 1\nservers:\n  a__b:\n    command: x\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := c.Check(); err != nil {
			t.Fatalf("a parsed config fails Check: %v", err)
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if _, err := ParseConfig(out); err != nil {
			t.Fatalf("the marshalled config does not parse: %v\n%s", err, out)
		}
	})
}

// FuzzLineReader: whatever an upstream writes, the reader never panics,
// and every line it passes on is one JSON value.
func FuzzLineReader(f *testing.F) {
	for _, seed := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
		"{\"jsonrpc\":\"2.0\",\"id\":\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n",
		"\n\n  \n[1,2]\n\"x\"\n", "not json\n", "\x00\xff\xfe\n", "{}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _ := io.ReadAll(newLineReader(io.NopCloser(bytes.NewReader(data))))
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, MaxMessageBytes+2)
		for sc.Scan() {
			if !json.Valid(sc.Bytes()) {
				t.Fatalf("passed on a line that is not JSON: %q", sc.Bytes())
			}
		}
	})
}
