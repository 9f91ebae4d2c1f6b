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
	if len(pos) != 1 {
		return usageError(callDoc, fmt.Errorf("call needs a tool name after the server, got %d arguments", len(pos)))
	}
	tool := pos[0]
	argv, err := exactjson.Parse([]byte(*argsJSON), exactjson.Limits{})
	if err != nil || argv.Kind() != exactjson.KindObject {
		return errors.New("--args must be a JSON object, such as '{\"name\":\"Ada\"}'")
	}
	ctx, cancel := t.bound(ctx, fs, defaultCallTimeout)
	defer cancel()
	term := newTerminal(stdin, stdout)
	c, err := t.connect(term.options(), stderr)
	if err != nil {
		return err
	}
	defer t.close(c)
	res, err := c.CallTool(ctx, tool, argv)
	term.endProgress()
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
}

// newTerminal reads answers from in and writes questions to out.
func newTerminal(in io.Reader, out io.Writer) *terminal {
	return &terminal{in: bufio.NewReader(in), out: out}
}

// options are the client options of a command that answers at the
// terminal: forms, URLs, sampling and roots, task following, progress.
func (t *terminal) options() client.Options {
	return client.Options{
		ClientInfo:   client.Implementation{Name: "weft-cli", Version: "0.1.0"},
		Handlers:     client.Handlers{Elicit: t.elicit, Sample: t.sample, Roots: roots},
		TasksEnabled: true,
		OnProgress:   t.progress,
		OnTaskStatus: t.taskStatus,
	}
}

func (t *terminal) readLine(prompt string) (string, error) {
	fmt.Fprint(t.out, prompt)
	line, err := t.in.ReadString('\n')
	if err != nil && line == "" {
		return "", fmt.Errorf("no answer on standard input: %w", err)
	}
	return strings.TrimSpace(line), nil
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
	if md, _ := mode.AsString(); md == "url" {
		u, _ := params.Get("url")
		us, _ := u.AsString()
		fmt.Fprintf(t.out, "\n%s\n  Open: %s\n", m, us)
		ans, err := t.readLine("Press Enter when done, or type d to decline, c to cancel: ")
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
	for {
		ans, err := t.readLine("[a]ccept, [d]ecline or [c]ancel? ")
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
		content, err := t.fill(schema)
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
	ans, err := t.readLine("Your reply as the model (empty to decline): ")
	if err != nil {
		return exactjson.Value{}, err
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
func (t *terminal) fill(schema *elicit.Schema) (exactjson.Value, error) {
	var members []exactjson.Member
	for _, f := range schema.Fields() {
		label := f.Title
		if label == "" {
			label = f.Name
		}
		if f.Description != "" {
			fmt.Fprintf(t.out, "  %s: %s\n", label, f.Description)
		}
		hint := kindHint(f)
		if f.Default.Kind() != exactjson.KindNull {
			hint += ", Enter for " + f.Default.String()
		}
		for {
			ans, err := t.readLine(fmt.Sprintf("  %s (%s): ", label, hint))
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

func (t *terminal) taskStatus(status, message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
