// Package tools holds airlock's built-in tools: their bounded schemas, risk
// and effect, and executors. Each constructor returns tool.Tool values for
// a tool.Registry; nothing here decides whether a call may run — the gate
// does that before any executor is reached.
package tools
