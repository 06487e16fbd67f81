// Package gateway puts airlock's gate in front of the MCP servers people
// already run. A config file names the upstream servers (a command over
// stdio, or a Streamable HTTP URL); the gateway connects to each as an MCP
// client and offers each upstream tool as one tool.Tool, named
// SERVER__TOOL, whose calls go through the gate like any built-in tool's:
// bounded schema, policy, guards, taint and provenance, approval,
// idempotency, audit, redaction and envelopes.
package gateway
