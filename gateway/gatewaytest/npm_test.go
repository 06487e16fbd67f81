package gatewaytest_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"airlock.dev/airlock/gateway/gatewaytest"
	"airlock.dev/airlock/gateway/gatewaytest/hostile"
)

// listTimeout bounds starting a server and listing its tools; Node
// starts in about a second, more on a loaded machine.
const listTimeout = time.Minute

// listTools connects the Go SDK's client over transport and returns the
// server's tools, logged with their annotations (go test -v shows them).
func listTools(t *testing.T, transport mcp.Transport) []*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), listTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "gatewaytest", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	defer cs.Close()
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		tools = append(tools, tool)
	}
	t.Logf("protocol %s, %d tools", cs.InitializeResult().ProtocolVersion, len(tools))
	for _, tool := range tools {
		annotations, _ := json.Marshal(tool.Annotations)
		t.Logf("  %s %s", tool.Name, annotations)
	}
	return tools
}

func names(tools []*mcp.Tool) []string {
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	return names
}

// TestNPMServers starts each npm server over stdio and checks that it
// lists the tools the gateway's tests rely on.
func TestNPMServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  func(*testing.T) *exec.Cmd
		want []string
	}{
		{"everything", func(t *testing.T) *exec.Cmd { return gatewaytest.Everything(t) }, []string{"echo", "get-sum", "get-tiny-image"}},
		{"filesystem", func(t *testing.T) *exec.Cmd { return gatewaytest.Filesystem(t, t.TempDir()) }, []string{"read_text_file", "write_file", "list_allowed_directories"}},
		{"memory", func(t *testing.T) *exec.Cmd { return gatewaytest.Memory(t) }, []string{"create_entities", "read_graph", "search_nodes"}},
		{"hostile", func(t *testing.T) *exec.Cmd { return gatewaytest.Hostile(t) }, hostile.ToolNames()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(listTools(t, &mcp.CommandTransport{Command: tc.cmd(t)}))
			for _, name := range tc.want {
				if !slices.Contains(got, name) {
					t.Errorf("tools/list lacks %s: %v", name, got)
				}
			}
		})
	}
}

// TestMCPProxy lists the memory server's tools through mcp-proxy's
// Streamable HTTP, and checks they are the ones it lists over stdio.
func TestMCPProxy(t *testing.T) {
	url := gatewaytest.StartMCPProxy(t, gatewaytest.Memory(t))
	overHTTP := names(listTools(t, &mcp.StreamableClientTransport{Endpoint: url}))
	overStdio := names(listTools(t, &mcp.CommandTransport{Command: gatewaytest.Memory(t)}))
	if len(overHTTP) == 0 || !slices.Equal(overHTTP, overStdio) {
		t.Errorf("through mcp-proxy the tools are %v, over stdio %v", overHTTP, overStdio)
	}
}
