package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/elicit"
	"github.com/weftmcp/weft/exactjson"
)

// callCmd: weft call TARGET TOOL [--args JSON].
func callCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("call")
	t := addTarget(fs)
	argsJSON := fs.String("args", "{}", "tool arguments as a `JSON` object")
	pos, err := parseFlags(fs, callDoc, args, stdout)
	if err != nil {
		return err
	}
	if pos, err = t.resolve(callDoc, pos); err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError(callDoc, errors.New("call needs a tool name after the server"))
	}
	tool, words := pos[0], pos[1:]
	argv, err := exactjson.Parse([]byte(*argsJSON), exactjson.Limits{})
	if err != nil || argv.Kind() != exactjson.KindObject {
		return errors.New("--args must be a JSON object, such as '{\"name\":\"Ada\"}'")
	}
	for _, w := range words {
		if _, _, err := splitArg(w); err != nil {
			return usageError(callDoc, fmt.Errorf("%w (the tool's name comes once, before its arguments)", err))
		}
	}
	ctx, cancel := t.bound(ctx, fs, defaultCallTimeout)
	defer cancel()
	c, term, err := t.open(ctx, stdin, stdout, stderr)
	if err != nil {
		return err
	}
	defer t.close(c)
	if len(words) > 0 {
		// NAME=VALUE words are typed by the tool's input schema.
		tools, err := c.ListTools(ctx)
		if err != nil {
			return t.timedOut(ctx, t.explain(err, "tools"))
		}
		var schema exactjson.Value
		if i := slices.IndexFunc(tools, func(x client.Tool) bool { return x.Name == tool }); i >= 0 {
			schema = tools[i].InputSchema
		}
		if argv, err = keyValueArgs(argv, words, schema); err != nil {
			return err
		}
	}
	res, err := c.CallTool(ctx, tool, argv)
	term.endProgress()
	var te *client.TaskError
	if errors.As(err, &te) {
		return t.explainTask(ctx, te)
	}
	if err != nil {
		return t.timedOut(ctx, t.explain(err, "tools"))
	}
	if t.json {
		return printJSON(stdout, res.Raw)
	}
	if res.IsError {
		fmt.Fprintln(stdout, "The tool reported an error:")
	}
	fmt.Fprintln(stdout, res.Text())
	if res.StructuredContent.Kind() != exactjson.KindNull && res.Text() == "" {
		fmt.Fprintln(stdout, res.StructuredContent.String())
	}
	if res.IsError {
		return errors.New("the tool call failed")
	}
	return nil
}

func roots(ctx context.Context) (exactjson.Value, error) {
	wd, err := os.Getwd()
	if err != nil {
		return exactjson.Value{}, err
	}
	return exactjson.Object(exactjson.Field("roots", exactjson.Array(exactjson.Object(
		exactjson.Field("uri", exactjson.String("file://"+wd)),
		exactjson.Field("name", exactjson.String("working directory")))))), nil
}

// terminal asks the user for elicitation answers and shows progress.
type terminal struct {
	mu       sync.Mutex
	in       *bufio.Reader
	out      io.Writer
	barShown bool
	// follow, when set, is the command line following a task, shown
	// when a task starts.
	follow func(id string) string
	tasks  map[string]bool // the tasks shown
	// pending is the read of standard input in progress (under mu).
	pending chan lineRead
	// auto answers questions without asking, for scripts.
	auto autoAnswers
}

// autoAnswers are the answers given on the command line: form fields
// (--answer NAME=VALUE), declining every form and URL (--decline), the
// reply to sampling (--sampling-reply), and never reading standard input
// (--no-input).
type autoAnswers struct {
	fields   map[string]string
	decline  bool
	sampling string
	noInput  bool
}

// newTerminal reads answers from in and writes questions to out.
func newTerminal(in io.Reader, out io.Writer) *terminal {
	return &terminal{in: bufio.NewReader(in), out: out}
}

// options are the client options of a command that answers at the
// terminal: forms, URLs, sampling and roots, task following, progress.
func (t *terminal) options() client.Options {
	return client.Options{
		ClientInfo:   client.Implementation{Name: "weft-cli", Version: cliVersion()},
		Handlers:     client.Handlers{Elicit: t.elicit, Sample: t.sample, Roots: roots},
		TasksEnabled: true,
		OnProgress:   t.progress,
		OnTaskStatus: t.taskStatus,
	}
}

// readLine shows prompt and reads one line of the answer. It returns when
// ctx ends (Ctrl-C) even while the read waits; that read is kept for the
// next question.
func (t *terminal) readLine(ctx context.Context, prompt string) (string, error) {
	if t.auto.noInput {
		return "", noAnswer(fmt.Sprintf("the server asks %q and --no-input is given: answer with --answer, --decline or --sampling-reply", strings.TrimSpace(prompt)))
	}
	fmt.Fprint(t.out, prompt)
	if t.pending == nil {
		ch := make(chan lineRead, 1)
		t.pending = ch
		go func() {
			line, err := t.in.ReadString('\n')
			ch <- lineRead{line, err}
		}()
	}
	select {
	case r := <-t.pending:
		t.pending = nil
		if r.err != nil && r.line == "" {
			// A task asking leaves it waiting: weft task follow
			// answers it later.
			return "", noAnswer(fmt.Sprintf("no answer on standard input: %v", r.err))
		}
		return strings.TrimSpace(r.line), nil
	case <-ctx.Done():
		fmt.Fprintln(t.out)
		return "", context.Cause(ctx)
	}
}

// noAnswer is the error of a question nobody answers: it leaves a task
// waiting (it is client.ErrLeaveTask), so that weft task follow can answer
// it later, and ends a plain call.
type noAnswer string

func (e noAnswer) Error() string        { return string(e) }
func (e noAnswer) Is(target error) bool { return target == client.ErrLeaveTask }

// lineRead is one line read from the terminal.
type lineRead struct {
	line string
	err  error
}

func action(a string) exactjson.Value {
	return exactjson.Object(exactjson.Field("action", exactjson.String(a)))
}

func (t *terminal) elicit(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endProgressLocked()
	msg, _ := params.Get("message")
	m, _ := msg.AsString()
	mode, _ := params.Get("mode")
	if t.auto.decline {
		fmt.Fprintf(t.out, "\n%s\n  (declined: --decline)\n", m)
		return action("decline"), nil
	}
	if md, _ := mode.AsString(); md == "url" {
		u, _ := params.Get("url")
		us, _ := u.AsString()
		fmt.Fprintf(t.out, "\n%s\n  Open: %s\n", m, us)
		ans, err := t.readLine(ctx, "Press Enter when done, or type d to decline, c to cancel: ")
		if err != nil {
			return exactjson.Value{}, err
		}
		switch ans {
		case "d", "decline":
			return action("decline"), nil
		case "c", "cancel":
			return action("cancel"), nil
		}
		return action("accept"), nil
	}
	sv, _ := params.Get("requestedSchema")
	schema, err := elicit.ParseSchema(sv)
	if err != nil {
		return exactjson.Value{}, fmt.Errorf("the server sent a form this client cannot show: %w", err)
	}
	fmt.Fprintf(t.out, "\n%s\n", m)
	if len(t.auto.fields) > 0 {
		// Answered on the command line: accepted without asking, the
		// fields not given asked (or their defaults taken).
		content, err := t.fill(ctx, schema)
		if err != nil {
			return exactjson.Value{}, err
		}
		if err := schema.Validate(content); err != nil {
			return exactjson.Value{}, fmt.Errorf("the answers do not fit the form: %w", err)
		}
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", content)), nil
	}
	for {
		ans, err := t.readLine(ctx, "[a]ccept, [d]ecline or [c]ancel? ")
		if err != nil {
			return exactjson.Value{}, err
		}
		switch strings.ToLower(ans) {
		case "d", "decline":
			return action("decline"), nil
		case "c", "cancel":
			return action("cancel"), nil
		case "a", "accept", "":
		default:
			continue
		}
		content, err := t.fill(ctx, schema)
		if err != nil {
			return exactjson.Value{}, err
		}
		if err := schema.Validate(content); err != nil {
			fmt.Fprintf(t.out, "That does not fit the form: %v\n", err)
			continue
		}
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", content)), nil
	}
}

// errSamplingRefused is what the sampling handler returns when the user
// refuses to answer as the model.
var errSamplingRefused = errors.New("you declined to answer the sampling request")

// sample answers sampling/createMessage at the terminal: the CLI has no
// model, so it shows the conversation and the user types the reply.
func (t *terminal) sample(ctx context.Context, params exactjson.Value) (exactjson.Value, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endProgressLocked()
	fmt.Fprintln(t.out, "\nThe server asks your model for a reply (sampling). This client has no model: you answer.")
	if sp, ok := params.Get("systemPrompt"); ok {
		if s, _ := sp.AsString(); s != "" {
			fmt.Fprintf(t.out, "  system: %s\n", s)
		}
	}
	msgs, _ := params.Get("messages")
	for m := range msgs.Values() {
		role, _ := m.Get("role")
		r, _ := role.AsString()
		c, _ := m.Get("content")
		blocks := []exactjson.Value{c}
		if c.Kind() == exactjson.KindArray {
			blocks = slices.Collect(c.Values())
		}
		for _, b := range blocks {
			typ, _ := b.Get("type")
			ty, _ := typ.AsString()
			if ty == "text" {
				tx, _ := b.Get("text")
				s, _ := tx.AsString()
				for i, line := range strings.Split(s, "\n") {
					switch {
					case i == 0:
						fmt.Fprintf(t.out, "  %s: %s\n", r, line)
					case line == "":
						fmt.Fprintln(t.out)
					default:
						fmt.Fprintf(t.out, "    %s\n", line)
					}
				}
			} else {
				fmt.Fprintf(t.out, "  %s: [%s content, not shown]\n", r, ty)
			}
		}
	}
	if mt, ok := params.Get("maxTokens"); ok {
		fmt.Fprintf(t.out, "  (at most %s tokens)\n", mt.String())
	}
	ans := t.auto.sampling
	if ans != "" {
		fmt.Fprintf(t.out, "  (replied: --sampling-reply)\n")
	} else {
		var err error
		if ans, err = t.readLine(ctx, "Your reply as the model (empty to decline): "); err != nil {
			return exactjson.Value{}, err
		}
	}
	if ans == "" {
		return exactjson.Value{}, errSamplingRefused
	}
	return exactjson.Object(
		exactjson.Field("role", exactjson.String("assistant")),
		exactjson.Field("content", exactjson.Object(
			exactjson.Field("type", exactjson.String("text")),
			exactjson.Field("text", exactjson.String(ans)))),
		exactjson.Field("model", exactjson.String("weft-cli (typed by the user)")),
		exactjson.Field("stopReason", exactjson.String("endTurn"))), nil
}

// fill asks for each field with typed parsing. A field shows its
// description and default; an answer the form refuses re-asks only that
// field, with the reason.
func (t *terminal) fill(ctx context.Context, schema *elicit.Schema) (exactjson.Value, error) {
	var members []exactjson.Member
	for _, f := range schema.Fields() {
		label := f.Title
		if label == "" {
			label = f.Name
		}
		if f.Description != "" {
			fmt.Fprintf(t.out, "  %s: %s\n", label, f.Description)
		}
		if given, ok := t.auto.fields[f.Name]; ok {
			v, err := parseAnswer(f, given)
			if err == nil {
				if reason := fieldProblem(schema, f.Name, v); reason != "" {
					err = errors.New(reason)
				}
			}
			if err != nil {
				return exactjson.Value{}, fmt.Errorf("--answer %s=%s: %v", f.Name, given, err)
			}
			fmt.Fprintf(t.out, "  %s: %s (--answer)\n", label, given)
			members = append(members, exactjson.Field(f.Name, v))
			continue
		}
		if len(t.auto.fields) > 0 && (f.Default.Kind() != exactjson.KindNull || !f.Required) {
			// Answering from the command line: what is not given takes
			// its default or stays out.
			if f.Default.Kind() != exactjson.KindNull {
				members = append(members, exactjson.Field(f.Name, f.Default))
			}
			continue
		}
		hint := kindHint(f)
		if f.Default.Kind() != exactjson.KindNull {
			hint += ", Enter for " + f.Default.String()
		}
		for {
			ans, err := t.readLine(ctx, fmt.Sprintf("  %s (%s): ", label, hint))
			if err != nil {
				return exactjson.Value{}, err
			}
			if ans == "" {
				if f.Default.Kind() != exactjson.KindNull {
					members = append(members, exactjson.Field(f.Name, f.Default))
					break
				}
				if !f.Required {
					break
				}
				fmt.Fprintln(t.out, "  This field is required.")
				continue
			}
			v, err := parseAnswer(f, ans)
			if err != nil {
				fmt.Fprintf(t.out, "  %v\n", err)
				continue
			}
			if reason := fieldProblem(schema, f.Name, v); reason != "" {
				fmt.Fprintf(t.out, "  %s %s; try again.\n", label, reason)
				continue
			}
			members = append(members, exactjson.Field(f.Name, v))
			break
		}
	}
	return exactjson.Object(members...), nil
}

// fieldProblem checks one field's value against the form alone and returns
// the form's reason for refusing it, or "".
func fieldProblem(schema *elicit.Schema, name string, v exactjson.Value) string {
	err := schema.Validate(exactjson.Object(exactjson.Field(name, v)))
	var ve *elicit.ValidationError
	if !errors.As(err, &ve) {
		return ""
	}
	for _, p := range ve.Problems {
		if p.Field == name {
			return p.Reason
		}
	}
	return ""
}

func kindHint(f elicit.FieldInfo) string {
	var opts []string
	for _, o := range f.Options {
		opts = append(opts, o.Value)
	}
	req := ""
	if f.Required {
		req = ", required"
	}
	switch f.Kind {
	case elicit.KindBoolean:
		return "yes/no" + req
	case elicit.KindNumber:
		return "number" + req
	case elicit.KindInteger:
		return "whole number" + req
	case elicit.KindSingleSelect:
		return "one of " + strings.Join(opts, ", ") + req
	case elicit.KindMultiSelect:
		return "comma-separated from " + strings.Join(opts, ", ") + req
	}
	if f.Format != "" {
		return string(f.Format) + req
	}
	return "text" + req
}

func parseAnswer(f elicit.FieldInfo, ans string) (exactjson.Value, error) {
	switch f.Kind {
	case elicit.KindBoolean:
		switch strings.ToLower(ans) {
		case "y", "yes", "true":
			return exactjson.Bool(true), nil
		case "n", "no", "false":
			return exactjson.Bool(false), nil
		}
		return exactjson.Value{}, errors.New("answer yes or no")
	case elicit.KindNumber, elicit.KindInteger:
		n, err := exactjson.ParseNumber(ans)
		if err != nil || (f.Kind == elicit.KindInteger && !n.IsInteger()) {
			return exactjson.Value{}, errors.New("enter a number such as 12 or 3.50")
		}
		return exactjson.NumberValue(n), nil
	case elicit.KindMultiSelect:
		var vs []exactjson.Value
		for _, p := range strings.Split(ans, ",") {
			vs = append(vs, exactjson.String(strings.TrimSpace(p)))
		}
		return exactjson.Array(vs...), nil
	}
	return exactjson.String(ans), nil
}

func (t *terminal) progress(progress, total float64, message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drawBar(progress, total, message)
}

func (t *terminal) drawBar(progress, total float64, message string) {
	const width = 30
	filled := 0
	if total > 0 {
		filled = min(int(progress/total*width), width)
	}
	fmt.Fprintf(t.out, "\r[%s%s] %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), message)
	t.barShown = true
}

func (t *terminal) taskStatus(id, status, message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.tasks[id] {
		if t.tasks == nil {
			t.tasks = map[string]bool{}
		}
		t.tasks[id] = true
		t.endProgressLocked()
		fmt.Fprintf(t.out, "task %s started", id)
		if t.follow != nil {
			fmt.Fprintf(t.out, "; follow it from elsewhere with: %s", t.follow(id))
		}
		fmt.Fprintln(t.out)
	}
	if status == "input_required" {
		return
	}
	fmt.Fprintf(t.out, "\rtask %s: %s\033[K", status, message)
	t.barShown = true
}

func (t *terminal) endProgress() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.endProgressLocked()
}

func (t *terminal) endProgressLocked() {
	if t.barShown {
		fmt.Fprintln(t.out)
		t.barShown = false
	}
}
