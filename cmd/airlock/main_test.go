package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	// In-process tests keep the approval key in a directory of their own.
	dir, err := os.MkdirTemp("", "airlock-config")
	if err != nil {
		panic(err)
	}
	if os.Getenv("AIRLOCK_TEST_SCRIPT") == "" { // a transcript's command keeps the script's own
		os.Setenv("XDG_CONFIG_HOME", dir)
	}
	testscript.Main(m, map[string]func(){
		"airlock": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI transcripts in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script", RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("XDG_CONFIG_HOME", env.WorkDir+"/.config")
			env.Setenv("AIRLOCK_TEST_SCRIPT", "1")
			return nil
		}})
}
