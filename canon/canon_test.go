package canon

import "testing"

func TestJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1, "a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{` { "z" : { "y":2,"x":1 } } `, `{"z":{"x":1,"y":2}}`},
		{`{"n":1.50,"big":12345678901234567890}`, `{"big":12345678901234567890,"n":1.50}`},
		{`"<&>"`, `"\u003c\u0026\u003e"`},
		{`{"é":"\u00e9"}`, `{"é":"é"}`},
	}
	for _, tt := range tests {
		got, err := JSON([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("JSON(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":1} {"b":2}`, `nul`} {
		if _, err := JSON([]byte(bad)); err == nil {
			t.Errorf("JSON(%q) accepted", bad)
		}
	}
	a, _ := JSON([]byte(`{"x":1,"y":2}`))
	b, _ := JSON([]byte(`{"y":2,"x":1}`))
	if Bind(nil, "t", string(a)) != Bind(nil, "t", string(b)) || Bind(nil, "t", string(a)) == Bind(nil, "u", string(a)) {
		t.Error("Bind does not bind tool and canonical arguments")
	}
	// Parts do not run together, and the key changes the hash.
	if Bind(nil, "ab", "c") == Bind(nil, "a", "bc") {
		t.Error("Bind lets parts run together")
	}
	if Bind([]byte("k"), "t") == Bind(nil, "t") || Bind([]byte("k"), "t") == Bind([]byte("l"), "t") {
		t.Error("Bind ignores its key")
	}
}
