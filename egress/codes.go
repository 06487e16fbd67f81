package egress

import (
	"fmt"

	"airlock.dev/airlock/tool"
)

// The codes of egress's refusals. Each is a stable snake_case word a model
// can branch on; the message says what was refused and why, the hint what
// to do instead.
const (
	CodeDenied           tool.Code = "egress_denied"            // the policy forbids the host, address, scheme or port
	CodeUnresolvable     tool.Code = "egress_unresolvable"      // the host name does not resolve
	CodeInvalidURL       tool.Code = "egress_invalid_url"       // the URL is malformed or ambiguous
	CodeTooLarge         tool.Code = "egress_too_large"         // the response is over a size or decompression limit
	CodeContentType      tool.Code = "egress_content_type"      // the response's content type is not allowed
	CodeTimeout          tool.Code = "egress_timeout"           // connecting or reading ran past its limit
	CodeRedirectDenied   tool.Code = "egress_redirect_denied"   // a redirect went somewhere forbidden, or too many
	CodeConnectionFailed tool.Code = "egress_connection_failed" // the host was allowed but could not be reached, or sent a broken response
)

// Hints shared by several refusals.
const (
	hintPublic     = "Only public hosts may be reached; do not retry this address or another internal one"
	hintFixURL     = "Give a plain absolute URL such as https://example.com/path: no user@, no backslashes, no spaces, a canonical host"
	hintUnresolved = "Check the host name's spelling; a name that does not resolve cannot be fetched"
)

func denied(hint, format string, args ...any) *tool.Error {
	return &tool.Error{Code: CodeDenied, Message: fmt.Sprintf(format, args...), Hint: hint}
}

func invalidURL(format string, args ...any) *tool.Error {
	return &tool.Error{Code: CodeInvalidURL, Message: fmt.Sprintf(format, args...), Hint: hintFixURL}
}
