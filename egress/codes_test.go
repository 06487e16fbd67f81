package egress_test

import (
	"testing"

	"airlock.dev/airlock/egress"
	"airlock.dev/airlock/tool"
)

// tool.IsTransient spells three of egress's codes itself (tool cannot
// import egress); they must stay the same words.
func TestTransientCodes(t *testing.T) {
	for _, c := range []tool.Code{egress.CodeTimeout, egress.CodeConnectionFailed, egress.CodeUnresolvable} {
		if !tool.IsTransient(c) {
			t.Errorf("%s is not transient to tool.IsTransient", c)
		}
	}
	for _, c := range []tool.Code{egress.CodeDenied, egress.CodeInvalidURL, egress.CodeTooLarge, egress.CodeContentType, egress.CodeRedirectDenied} {
		if tool.IsTransient(c) {
			t.Errorf("%s is transient to tool.IsTransient", c)
		}
	}
}
