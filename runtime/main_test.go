package runtime

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(keyHelperEnv); dir != "" {
		os.Exit(keyHelper(dir))
	}
	// The tests and examples keep the approval key in a directory of
	// their own, never the user's.
	dir, err := os.MkdirTemp("", "airlock-runtime-config")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
