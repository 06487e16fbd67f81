package main

import (
	"runtime/debug"
	"testing"
)

func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, "airlock (devel), revision unknown"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "airlock (devel), revision unknown"},
		{&debug.BuildInfo{Main: debug.Module{Version: ""}}, true, "airlock (devel), revision unknown"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: vcs("vcs.revision", "abc123", "vcs.modified", "false")}, true,
			"airlock v0.3.0, revision abc123"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20250101000000-abc123+dirty"}, Settings: vcs("vcs.revision", "abc123", "vcs.modified", "true")}, true,
			"airlock v0.0.0-20250101000000-abc123+dirty, revision abc123+modified"},
	}
	for _, tt := range tests {
		if got := versionLine(tt.info, tt.ok); got != tt.want {
			t.Errorf("versionLine(%+v) = %q, want %q", tt.info, got, tt.want)
		}
	}
}
