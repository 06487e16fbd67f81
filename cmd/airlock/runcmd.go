package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"airlock.dev/airlock/plural"

	"airlock.dev/airlock/agent"
	"airlock.dev/airlock/model"
	"airlock.dev/airlock/store"
	"airlock.dev/airlock/tool"
)

// runFlags are the flags of airlock run and airlock resume: what the loop
// runs with.
type runFlags struct {
	sf           *settingFlags
	models       listFlag
	prices       listFlag
	script       string
	session      string
	asJSON       bool
	maxTokens    int64
	maxSteps     int
	budgetUSD    string
	timeout      time.Duration
	toolTimeout  time.Duration
	modelTimeout time.Duration
	// basePrices is the table --price adds to: a resumed run's own,
	// from its checkpoint, else the built-in one.
	basePrices model.PriceTable
}

func registerRunFlags(fs *flag.FlagSet) *runFlags {
	f := &runFlags{sf: registerSettings(fs, false)}
	fs.Var(&f.models, "model", "a model as `PROVIDER:MODEL[@BASE_URL]` (openai or anthropic; repeatable, in fallback order). Keys come from OPENAI_API_KEY and ANTHROPIC_API_KEY")
	fs.Var(&f.prices, "price", "a model's price as `MODEL=IN,OUT` in USD per million tokens (repeatable), over the built-in table")
	fs.StringVar(&f.script, "script", "", "plan from a script `FILE` (a JSON array of steps) instead of a model: for tests and replay")
	fs.StringVar(&f.session, "session", "", "the session `ID` (a new one when absent)")
	fs.BoolVar(&f.asJSON, "json", false, "print the run as JSON lines: events, then the summary")
	fs.Int64Var(&f.maxTokens, "max-tokens", agent.DefaultMaxTokens, "the run's token budget `N`, input and output, over every model call")
	fs.IntVar(&f.maxSteps, "max-steps", agent.DefaultMaxSteps, "the step budget `N`: planner calls, resumes included")
	fs.StringVar(&f.budgetUSD, "budget-usd", "", "the run's money budget in `USD`, such as 0.50 (default: none)")
	fs.DurationVar(&f.timeout, "timeout", agent.DefaultDeadline, "the whole run's wall-clock `limit`")
	fs.DurationVar(&f.toolTimeout, "tool-timeout", agent.DefaultToolTimeout, "one tool call's `limit`")
	fs.DurationVar(&f.modelTimeout, "model-timeout", model.DefaultAttemptTimeout, "one model attempt's `limit`")
	return f
}

func runRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const usage = `usage: airlock run [flags] "TASK"

Runs the bounded agent loop on TASK: a model proposes tool calls, and
every call goes through the gate. The run ends finished, or with the bound
that stopped it (max_steps, repetition, budget, deadline, killed,
needs_input, waiting_approval, degraded). On a terminal, asks and ask_user
are prompted for; otherwise the run parks and ` + "`airlock resume SESSION`" + `
continues it once ` + "`airlock approve ID`" + ` decided.

flags:`
	return loopCommand(ctx, "run", usage, args, stdin, stdout, stderr, nil, func(ctx context.Context, a *agent.Agent, f *runFlags, task string) (*agent.Summary, error) {
		return a.Run(ctx, f.session, task)
	})
}

func runResume(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const usage = "usage: airlock resume [flags] SESSION\n\nContinues a run parked on an approval, once `airlock approve ID` (or deny)\ndecided it, with the models and prices the run started with (kept in its\ncheckpoint); --model and --price override them. Budgets are given again.\n\nflags:"
	return loopCommand(ctx, "resume", usage, args, stdin, stdout, stderr, savedSetup, func(ctx context.Context, a *agent.Agent, _ *runFlags, session string) (*agent.Summary, error) {
		return a.Resume(ctx, session)
	})
}

// savedSetup takes a resumed run's models and prices from its checkpoint,
// unless --model or --script names the planner; --price still overrides.
func savedSetup(ctx context.Context, f *runFlags, runs store.Runs, session string) error {
	saved, err := agent.SavedSetup(ctx, runs, session)
	if err != nil {
		return err
	}
	if len(f.models) == 0 && f.script == "" {
		if len(saved.Models) == 0 {
			return fmt.Errorf("the checkpoint of session %s names no model (a scripted run?): give --script FILE or --model PROVIDER:MODEL[@BASE_URL]", session)
		}
		f.models = listFlag(saved.Models)
	}
	f.basePrices = saved.Prices
	return nil
}

// loopCommand parses the flags and the one argument of run or resume,
// and drives the agent with start.
func loopCommand(ctx context.Context, name, usage string, args []string, stdin io.Reader, stdout, stderr io.Writer,
	setup func(context.Context, *runFlags, store.Runs, string) error,
	start func(context.Context, *agent.Agent, *runFlags, string) (*agent.Summary, error)) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := registerRunFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	rest, err := interleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(rest) != 1 {
		fs.Usage()
		return exitUsage
	}
	var fromStore func(context.Context, store.Runs) error
	if setup != nil {
		fromStore = func(ctx context.Context, runs store.Runs) error { return setup(ctx, f, runs, rest[0]) }
	}
	return f.drive(ctx, fs, name, stdin, stdout, stderr, fromStore, func(ctx context.Context, a *agent.Agent) (*agent.Summary, error) {
		return start(ctx, a, f, rest[0])
	})
}

// drive builds the agent the flags describe and runs start with it.
// setup, when not nil, completes the flags from the store first.
func (f *runFlags) drive(ctx context.Context, fs *flag.FlagSet, name string, stdin io.Reader, stdout, stderr io.Writer,
	setup func(context.Context, store.Runs) error, start func(context.Context, *agent.Agent) (*agent.Summary, error)) int {
	set, err := f.sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, name, err)
	}
	var opts *agent.Options
	if setup == nil { // bad flags are told before anything is opened
		if opts, err = f.options(); err != nil {
			return misused(stderr, name, err)
		}
	}
	set.envelopes = true
	e, err := openRuntime(ctx, set, "", nil)
	if err != nil {
		return refused(stderr, name, err)
	}
	defer e.Close()
	if setup != nil {
		if err := setup(ctx, e.Store); err != nil {
			return refused(stderr, name, err)
		}
		if opts, err = f.options(); err != nil {
			return misused(stderr, name, err)
		}
	}
	opts.Gate, opts.Sessions, opts.Runs, opts.Approvals = e.Gate, e.Store, e.Store, e.Store
	opts.Role, opts.Mode, opts.Decider = set.Role, set.Mode, decider()
	tty := isTerminal(stdin) && isTerminal(stderr)
	if tty {
		in := bufio.NewReader(stdin)
		opts.Approve = func(_ context.Context, req *tool.ApprovalRequest, reason string) (bool, error) {
			fmt.Fprintf(stderr, "\napproval %s: %s %s\n  %s\napprove? [y/N] ", req.ID, req.Tool, truncate(string(req.Args), 2000), reason)
			line, err := in.ReadString('\n')
			return strings.EqualFold(strings.TrimSpace(line), "y"), ignoreEOF(err)
		}
		opts.Ask = func(_ context.Context, q string) (string, error) {
			fmt.Fprintf(stderr, "\nquestion: %s\n> ", q)
			line, err := in.ReadString('\n')
			return strings.TrimSpace(line), ignoreEOF(err)
		}
	}
	switch {
	case f.asJSON:
		opts.OnEvent = func(ev agent.Event) { writeJSONLine(stdout, ev) }
	case isTerminal(stderr):
		opts.OnEvent = func(ev agent.Event) { progress(stderr, ev) }
	}
	a, err := agent.New(opts)
	if err != nil {
		return misused(stderr, name, err)
	}
	sum, err := start(ctx, a)
	if err != nil {
		return refused(stderr, name, err)
	}
	if f.asJSON {
		writeJSONLine(stdout, sum)
	} else {
		printSummary(stdout, stderr, sum)
	}
	if !sum.Success {
		return exitRefused
	}
	return exitOK
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// options turns the flags into agent options with the planner.
func (f *runFlags) options() (*agent.Options, error) {
	lim := agent.Limits{MaxTokens: f.maxTokens, MaxSteps: f.maxSteps, Deadline: f.timeout, ToolTimeout: f.toolTimeout}
	if f.maxTokens <= 0 {
		return nil, errors.New("--max-tokens must be positive")
	}
	if f.maxSteps < 1 || f.maxSteps > agent.MaxMaxSteps {
		return nil, fmt.Errorf("--max-steps must be 1 to %d, not %d", agent.MaxMaxSteps, f.maxSteps)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--timeout", f.timeout}, {"--tool-timeout", f.toolTimeout}, {"--model-timeout", f.modelTimeout}} {
		if d.v < 0 {
			return nil, fmt.Errorf("%s %s is negative: give a duration such as 30s, or 0 for the default", d.flag, d.v)
		}
	}
	prices := model.DefaultPrices()
	if f.basePrices != nil {
		prices = maps.Clone(f.basePrices)
	}
	for _, p := range f.prices {
		if err := prices.Set(p); err != nil {
			return nil, err
		}
	}
	if f.budgetUSD != "" {
		v, err := model.ParseUSD(f.budgetUSD)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("--budget-usd %q: give a positive amount of dollars, such as 0.50", f.budgetUSD)
		}
		lim.MaxCost = v
	}
	o := &agent.Options{Limits: lim, Prices: prices}
	switch {
	case f.script != "" && len(f.models) > 0:
		return nil, errors.New("give --model or --script, not both")
	case f.script != "":
		fh, err := os.Open(f.script)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		s, err := agent.LoadScript(fh)
		if err != nil {
			return nil, err
		}
		o.Planner = s
		prices[agent.ScriptModel] = model.Price{} // a script costs nothing
		return o, nil
	case len(f.models) == 0:
		return nil, errors.New("name a model with --model PROVIDER:MODEL[@BASE_URL], such as --model openai:gpt-4o-mini")
	}
	pol := &model.Policy{AttemptTimeout: f.modelTimeout, Deadline: f.timeout}
	chain, err := model.FromSpecs(f.models, nil, &model.Options{Policy: pol})
	if err != nil {
		return nil, err
	}
	o.Planner, o.Models = chain, f.models
	// Reserve at the dearest model the chain may fall back to; a money
	// budget over a model with no known price cannot be kept.
	for _, m := range f.models {
		sp, _ := model.ParseSpec(m)
		p, ok := prices.Lookup(sp.Model)
		if !ok {
			if lim.MaxCost > 0 {
				return nil, fmt.Errorf("no price is known for %s, so --budget-usd cannot be kept; give one with --price %s=IN,OUT", sp.Model, sp.Model)
			}
			continue
		}
		o.ReservePrice.Input = max(o.ReservePrice.Input, p.Input)
		o.ReservePrice.Output = max(o.ReservePrice.Output, p.Output)
	}
	return o, nil
}

// isTerminal says whether v is a character device, as a terminal is.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress writes one live line of a run on a terminal.
func progress(w io.Writer, ev agent.Event) {
	switch ev.Type {
	case agent.EventModel:
		line := fmt.Sprintf("step %d  model %s", ev.Step, ev.Model)
		if ev.Attempts > 1 {
			line += fmt.Sprintf(", %d attempts", ev.Attempts)
		}
		if ev.Fallbacks > 0 {
			line += fmt.Sprintf(", %d fallbacks", ev.Fallbacks)
		}
		fmt.Fprintln(w, line+fmt.Sprintf(", %d tokens", ev.Tokens))
	case agent.EventTool:
		line := fmt.Sprintf("step %d  %s: %s", ev.Step, ev.Tool, ev.Decision)
		if ev.Code != "" {
			line += " (" + ev.Code + ")"
		}
		fmt.Fprintln(w, line)
	case agent.EventApproval:
		fmt.Fprintf(w, "step %d  %s waits for approval %s\n", ev.Step, ev.Tool, ev.Approval)
	case agent.EventNote:
		fmt.Fprintf(w, "step %d  %s\n", ev.Step, ev.Text)
	}
}

// printSummary writes the answer to stdout and the account to stderr.
func printSummary(stdout, stderr io.Writer, s *agent.Summary) {
	if s.Answer != "" {
		fmt.Fprintln(stdout, s.Answer)
	}
	cost := s.CostUSD.String()
	if !s.CostUSD.Known {
		cost = "cost unknown"
	}
	fmt.Fprintf(stderr, "%s after %s: %s, %s, model %s, %s, %s, %s; session %s\n",
		s.Reason, plural.Count(int(s.Steps), "step", "steps"), plural.Count(int(s.Tokens), "token", "tokens"), cost, orNone(s.Model),
		plural.Count(s.Attempts, "attempt", "attempts"), plural.Count(s.Fallbacks, "fallback", "fallbacks"), plural.Count(s.Denials, "denial", "denials"), s.Session)
	for _, m := range s.Unpriced {
		fmt.Fprintf(stderr, "  no price is known for %s, so the run's cost is unknown; give one with --price %s=IN,OUT (USD per million tokens)\n", m, m)
	}
	if s.Detail != "" && s.Reason != agent.ReasonFinished {
		fmt.Fprintf(stderr, "  %s\n", s.Detail)
	}
	switch s.Reason {
	case agent.ReasonWaitingApproval:
		fmt.Fprintf(stderr, "  approve with `airlock approve %s`, then `airlock resume %s`\n", s.Approval, s.Session)
	case agent.ReasonNeedsInput:
		fmt.Fprintf(stderr, "  the run asks: %s\n", s.Question)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "… (" + strconv.Itoa(len(s)-n) + " more bytes)"
}

func runKill(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sf := registerSettings(fs, false)
	all := fs.Bool("all", false, "kill every session, present and future, until cleared")
	clearFlag := fs.Bool("clear", false, "lift the kill instead")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock kill [--clear] SESSION | airlock kill [--clear] --all\n\nStops a session (or every session) at its next step; a tool call in flight,\na sandboxed command included, is ended within about a second.\n\nflags:")
		fs.PrintDefaults()
	}
	rest, err := interleaved(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if (*all && len(rest) != 0) || (!*all && len(rest) != 1) {
		fs.Usage()
		return exitUsage
	}
	set, err := sf.resolve(fs, os.Getenv)
	if err != nil {
		return misused(stderr, "kill", err)
	}
	db, err := openStore(set)
	if err != nil {
		return refused(stderr, "kill", err)
	}
	defer db.Close()
	verb := map[bool]string{false: "killed", true: "cleared"}[*clearFlag]
	if *all {
		if err := db.SetKillAll(ctx, !*clearFlag); err != nil {
			return refused(stderr, "kill", err)
		}
		fmt.Fprintf(stdout, "%s: every session\n", verb)
		return exitOK
	}
	if _, err := db.KillSession(ctx, rest[0], !*clearFlag, time.Now()); err != nil {
		return refused(stderr, "kill", err)
	}
	fmt.Fprintf(stdout, "%s: session %s\n", verb, rest[0])
	return exitOK
}
