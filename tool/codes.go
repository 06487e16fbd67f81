package tool

// Code is a stable snake_case error code. Every code a caller of the gate
// can see is listed here, in one place, with what it means; the README
// lists them with examples.
type Code string

const (
	// Arguments.
	CodeInvalidArguments  Code = "invalid_arguments"   // malformed JSON or schema violations, all listed
	CodeArgumentsTooLarge Code = "arguments_too_large" // raw arguments over the size cap, refused before decoding
	CodeUnknownTool       Code = "unknown_tool"        // no tool of that name is registered
	CodeInvalidCall       Code = "invalid_call"        // an unknown role or mode in the call
	CodeRoleNotAllowed    Code = "role_not_allowed"    // the tool's risk is above what the caller's role may run
	CodeDenied            Code = "denied"              // the policy denies the call (mode or rule)
	CodeApprovalRequired  Code = "approval_required"   // the policy asks a person first
	CodeApprovalDenied    Code = "approval_denied"     // a person was asked and declined (or dismissed the question); nothing ran
	CodePolicyError       Code = "policy_error"        // a rule failed to evaluate; the call is denied (fail closed)
	CodeDeadlineExceeded  Code = "deadline_exceeded"   // the call ran past its deadline
	CodeCancelled         Code = "cancelled"           // the caller cancelled the call (or went away) before it finished
	CodeToolFailed        Code = "tool_failed"         // the tool hit a runtime fault; details are in the audit log only
	CodeInternal          Code = "internal_error"      // airlock itself failed; nothing ran, or the outcome is unknown
	CodePathOutside       Code = "path_outside_workspace"
	CodeNotFound          Code = "not_found"
	CodeNotAFile          Code = "not_a_file"
	CodeNotADirectory     Code = "not_a_directory"
	CodeFileTooLarge      Code = "file_too_large"
	CodeEditNoMatch       Code = "edit_no_match"
	CodeEditAmbiguous     Code = "edit_ambiguous"
	CodeInvalidPattern    Code = "invalid_pattern"
	CodeUnknownKey        Code = "unknown_key"

	// Commands (the codes of package command, as the gate passes them on).
	CodeCommandDenied      Code = "command_denied"         // the command policy refuses the command line
	CodeCommandParse       Code = "command_parse_error"    // the command line is not valid bash; it is refused
	CodeCommandTooLong     Code = "command_too_long"       // over command.MaxScriptBytes or MaxArgs
	CodeCommandTooComplex  Code = "command_too_complex"    // over command.MaxDepth, MaxCommands or MaxNesting
	CodeCommandInternal    Code = "command_internal_error" // the command check itself failed; the command is refused
	CodeSandboxUnavailable Code = "sandbox_unavailable"    // the sandbox lacks an isolation layer it needs here; nothing ran
	CodeChangesTooLarge    Code = "changes_too_large"      // a command changed more than the workspace's snapshot limits keep; none of its changes were applied
	CodeChangesRefused     Code = "changes_refused"        // a command's changes cannot be applied as made (a file name that is not UTF-8); none were applied

	// Untrusted content.
	CodeUntrustedFlagged Code = "untrusted_content_flagged" // the scanner flagged injected instructions, and the gate withholds such content

	// The loop's kill switch.
	CodeKilled Code = "killed" // the session, or every session, was killed (airlock kill); nothing ran

	// A door's own limits.
	CodeBusy Code = "busy" // the door already runs as many calls as it may, for this session or in all; nothing ran
)

// The codes of the egress guard (egress_denied, egress_invalid_url, ...)
// are listed in package egress (egress/codes.go), and those of the
// idempotency ledger (in_progress, idempotency_key_reused, ...) in package
// ledger, each beside the code that returns them.
