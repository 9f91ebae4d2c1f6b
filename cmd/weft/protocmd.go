package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/client/oauth"
	"github.com/weftmcp/weft/exactjson"
)

// The protocol commands: every client request of MCP 2026-07-28 from the
// terminal, against an HTTP URL or a stdio command.
var (
	discoverDoc = helpDoc{name: "discover", synopsis: []string{"weft discover TARGET"},
		about: "Prints what the server says about itself: name, versions, capabilities, instructions."}
	toolsDoc = helpDoc{name: "tools", synopsis: []string{"weft tools TARGET"},
		about: "Lists the server's tools."}
	promptsDoc = helpDoc{name: "prompts", synopsis: []string{"weft prompts TARGET"},
		about: "Lists the server's prompts and their arguments."}
	resourcesDoc = helpDoc{name: "resources", synopsis: []string{"weft resources TARGET"},
		about: "Lists the server's resources."}
	templatesDoc = helpDoc{name: "templates", synopsis: []string{"weft templates TARGET"},
		about: "Lists the server's resource templates."}
	promptDoc = helpDoc{name: "prompt", synopsis: []string{"weft prompt TARGET NAME [--arg NAME=VALUE]..."},
		about: "Gets prompt NAME with its arguments and prints its messages."}
	readDoc = helpDoc{name: "read", synopsis: []string{"weft read TARGET URI"},
		about: "Reads the resource at URI and prints its contents."}
	completeDoc = helpDoc{name: "complete", synopsis: []string{
		"weft complete TARGET --prompt NAME ARGUMENT VALUE",
		"weft complete TARGET --resource URI-TEMPLATE VARIABLE VALUE"},
		about: "Asks the server to complete the value of a prompt argument or a template variable."}
	listenDoc = helpDoc{name: "listen", synopsis: []string{"weft listen TARGET [--tools] [--prompts] [--resources] [--uri URI]... [--task ID]... [--count N]"},
		about: "Opens a subscriptions/listen stream and prints each notification as it arrives,\n" +
			"until interrupted (or N notifications). Without a selection it listens for every list change."}
	taskDoc = helpDoc{name: "task", synopsis: []string{
		"weft task get TARGET ID",
		"weft task follow TARGET ID",
		"weft task cancel TARGET ID"},
		about: "Shows a task, follows it to its result (answering its questions at the terminal), or cancels it."}
	callDoc = helpDoc{name: "call", synopsis: []string{"weft call TARGET TOOL [NAME=VALUE]... [--args JSON]"},
		about: "Calls TOOL and prints its result. Arguments are NAME=VALUE words, each value taken\n" +
			"as the tool's input schema types it (a string as written; a number, boolean,\n" +
			"object or array as JSON), on top of --args. Questions the server asks on the way\n" +
			"(forms, URLs to open, sampling, task input) are answered at the terminal, or by\n" +
			"--answer, --decline and --sampling-reply in scripts."}
)

// targetHelp is appended to every protocol command's help.
const targetHelp = "\nTARGET is the server's HTTP URL (http://127.0.0.1:8080/mcp), or, with --command,\n" +
	"left out: the server is then started as a stdio process."

func init() {
	for _, d := range []*helpDoc{&discoverDoc, &toolsDoc, &promptsDoc, &resourcesDoc, &templatesDoc,
		&promptDoc, &readDoc, &completeDoc, &listenDoc, &taskDoc, &callDoc} {
		d.about += targetHelp
	}
}

// headerList is a repeatable --header flag.
type headerList []string

// assignList is a repeatable NAME=VALUE flag.
type assignList []string

func (a *assignList) String() string { return strings.Join(*a, " ") }

func (a *assignList) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	*a = append(*a, v)
	return nil
}

// pairs returns the list as a map (a later NAME wins).
func (a assignList) pairs() map[string]string {
	m := make(map[string]string, len(a))
	for _, kv := range a {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func (h *headerList) String() string { return strings.Join(*h, ", ") }

func (h *headerList) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("a header is NAME: VALUE, got %q", v)
	}
	*h = append(*h, strings.TrimSpace(name)+": "+strings.TrimSpace(value))
	return nil
}

// target is where a protocol command's requests go and how its results
// are shown.
type target struct {
	command  string
	headers  headerList
	bearer   string
	bearerFn string
	json     bool
	login    bool
	lf       loginFlags
	answers  assignList // --answer NAME=VALUE
	auto     autoAnswers
	env      assignList // --env NAME=VALUE for --command
	trace    bool
	config   string
	protocol string
	timeout  time.Duration

	url     string   // set by resolve for HTTP targets
	release func()   // set by connect: frees the --login loopback listener
	argv    []string // the command's words, when an mcp.json gave them
	name    string   // the server's name in the mcp.json, when TARGET is one
}

// close closes the client and what connect opened for it.
func (t *target) close(c *client.Client) {
	_ = c.Close()
	if t.release != nil {
		t.release()
	}
}

// addTarget registers the flags every protocol command shares.
func addTarget(fs *flag.FlagSet) *target {
	t := &target{}
	fs.StringVar(&t.command, "command", "", "start the server as this stdio `COMMAND` (words split on spaces; quote with ' or \") instead of a URL")
	fs.Var(&t.headers, "header", "an HTTP header to send, `NAME: VALUE` (repeatable)")
	fs.StringVar(&t.bearer, "bearer", "", "send Authorization: Bearer `TOKEN` (visible in the process list: prefer --bearer-file)")
	fs.StringVar(&t.bearerFn, "bearer-file", "", "read the bearer token from `FILE`")
	fs.BoolVar(&t.json, "json", false, "print the result as JSON (for scripts)")
	fs.StringVar(&t.protocol, "protocol", "", "speak protocol `VERSION` (2026-07-28, 2025-11-25 or 2025-06-18) instead of trying 2026-07-28 and falling back to the newest 2025 revision the server lists")
	fs.BoolVar(&t.login, "login", false, "authorize in the browser when the server asks (OAuth; tokens cached per server, refreshed; weft logout URL forgets them)")
	fs.StringVar(&t.lf.clientID, "client-id", "", "with --login: the client `ID` registered for weft at the authorization server (default: its dynamic registration)")
	fs.StringVar(&t.lf.clientSecret, "client-secret-file", "", "with --client-id: read a confidential client's secret from `FILE`")
	fs.StringVar(&t.lf.metadataURL, "client-metadata-url", "", "with --login: the https `URL` of a client ID metadata document for weft (CIMD), used where the authorization server supports it")
	fs.Var(&t.answers, "answer", "answer the form field `NAME=VALUE` without asking (repeatable; a form then is accepted, its other fields take their defaults)")
	fs.BoolVar(&t.auto.decline, "decline", false, "decline every form and URL the server asks for, without asking")
	fs.StringVar(&t.auto.sampling, "sampling-reply", "", "answer every sampling request with `TEXT`, without asking")
	fs.BoolVar(&t.auto.noInput, "no-input", false, "never read standard input: a question no flag answers ends the command (a task is left waiting)")
	fs.Var(&t.env, "env", "with --command: set `NAME=VALUE` in the server's environment (repeatable)")
	fs.BoolVar(&t.trace, "trace", false, "print every JSON-RPC message sent (>) and received (<) on standard error")
	fs.StringVar(&t.config, "config", "", "read servers from this mcp.json `FILE` (default ./.mcp.json or ./mcp.json when TARGET is a name)")
	fs.DurationVar(&t.timeout, "timeout", 0, "give up when the command has not finished within `DURATION` (default 1m; call 10m, as the server may ask questions; listen and task follow: none; 0: wait forever)")
	return t
}

// Default --timeout of the protocol commands.
const (
	defaultCLITimeout  = time.Minute
	defaultCallTimeout = 10 * time.Minute
)

// bound returns ctx ending after the command's --timeout (def when the
// flag was not given; none for 0).
func (t *target) bound(ctx context.Context, fs *flag.FlagSet, def time.Duration) (context.Context, context.CancelFunc) {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "timeout" })
	if !set {
		t.timeout = def
	}
	if t.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, t.timeout, errCLITimeout)
}

// errCLITimeout is the cause of a context ended by --timeout.
var errCLITimeout = errors.New("--timeout")

// addTargetFlagSet is a flag set with only the target flags, for help.
func addTargetFlagSet() *flag.FlagSet {
	fs := newFlags("target")
	addTarget(fs)
	return fs
}

// resolve takes the target off the positional arguments and returns the
// rest.
func (t *target) resolve(doc helpDoc, pos []string) ([]string, error) {
	switch t.protocol {
	case "", client.ProtocolVersion, "2025-11-25", "2025-06-18":
	default:
		return nil, usageError(doc, fmt.Errorf("--protocol is 2026-07-28, 2025-11-25 or 2025-06-18, got %q", t.protocol))
	}
	if len(t.answers) > 0 {
		t.auto.fields = t.answers.pairs()
	}
	if t.command == "" && len(pos) > 0 && !strings.Contains(pos[0], "://") {
		// A server named in an mcp.json.
		s, file, err := lookupServer(t.config, pos[0])
		if err != nil {
			return nil, err
		}
		if file != "" {
			t.name = pos[0]
			if s.Command != "" {
				t.argv = append([]string{s.Command}, s.Args...)
				t.command = strings.Join(t.argv, " ")
				for k, v := range s.Env {
					t.env = append(assignList{k + "=" + v}, t.env...) // --env wins
				}
				pos = pos[1:]
			} else {
				for k, v := range s.Headers {
					t.headers = append(t.headers, k+": "+v)
				}
				pos = append([]string{s.URL}, pos[1:]...)
			}
		}
	} else if t.config != "" {
		return nil, usageError(doc, errors.New("--config names the file of the servers TARGET names; give a server name as TARGET"))
	}
	if t.auto.decline && len(t.answers) > 0 {
		return nil, usageError(doc, errors.New("give --answer or --decline, not both"))
	}
	if len(t.env) > 0 && t.command == "" {
		return nil, usageError(doc, errors.New("--env applies to --command"))
	}
	if t.command != "" {
		if len(t.headers) > 0 || t.bearer != "" || t.bearerFn != "" || t.login {
			return nil, usageError(doc, errors.New("--header, --bearer and --login apply to HTTP servers, not to --command"))
		}
		return pos, nil
	}
	if len(pos) == 0 {
		return nil, usageError(doc, errors.New("the server's URL is missing (or give --command to start a stdio server)"))
	}
	u, err := url.Parse(pos[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageError(doc, fmt.Errorf("%q is not a server URL such as http://127.0.0.1:8080/mcp, nor a server named in ./.mcp.json or ./mcp.json (--config FILE names another file; for a stdio server, use --command)", pos[0]))
	}
	if t.bearer != "" && t.bearerFn != "" {
		return nil, usageError(doc, errors.New("give --bearer or --bearer-file, not both"))
	}
	if t.login && (t.bearer != "" || t.bearerFn != "") {
		return nil, usageError(doc, errors.New("give --login or a bearer token, not both"))
	}
	if !t.login && t.lf != (loginFlags{}) {
		return nil, usageError(doc, errors.New("--client-id, --client-secret-file and --client-metadata-url apply to --login"))
	}
	if t.lf.clientSecret != "" && t.lf.clientID == "" {
		return nil, usageError(doc, errors.New("--client-secret-file needs --client-id"))
	}
	t.url = pos[0]
	return pos[1:], nil
}

// where names the target in messages.
func (t *target) where() string {
	if t.command != "" {
		return "the command " + t.command
	}
	return t.url
}

// open starts the terminal answering the server's questions (forms, URLs,
// sampling, roots, task input) and connects with its options, so that
// every command declares the same client capabilities. With --json the
// terminal writes to stderr: stdout carries the one JSON value.
func (t *target) open(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (*client.Client, *terminal, error) {
	out := stdout
	if t.json {
		out = stderr
	}
	term := newTerminal(stdin, out)
	term.follow = t.followCommand
	term.auto = t.auto
	c, err := t.connect(ctx, term.options(), stderr)
	return c, term, err
}

// followCommand is the command line following task id on this target.
func (t *target) followCommand(id string) string {
	if t.name != "" {
		cfg := ""
		if t.config != "" {
			cfg = " --config " + shellQuote(t.config)
		}
		return fmt.Sprintf("weft task follow %s%s %s", shellQuote(t.name), cfg, shellQuote(id))
	}
	if t.command != "" {
		return fmt.Sprintf("weft task follow --command %s %s", shellQuote(t.command), shellQuote(id))
	}
	return fmt.Sprintf("weft task follow %s %s", shellQuote(t.url), shellQuote(id))
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// explainTask explains a followed task that ended without a result: it
// failed or was cancelled, the command was interrupted (the task was
// cancelled), or it was left waiting for input it can still get.
func (t *target) explainTask(ctx context.Context, te *client.TaskError) error {
	switch {
	case errors.Is(te, client.ErrLeaveTask):
		return fmt.Errorf("task %s still waits for input (%v); answer it with:\n  %s", te.TaskID, te.Err, t.followCommand(te.TaskID))
	case ctx.Err() != nil && context.Cause(ctx) != errCLITimeout:
		return fmt.Errorf("interrupted: task %s was cancelled (tasks/cancel sent)", te.TaskID)
	case ctx.Err() != nil:
		return fmt.Errorf("task %s was cancelled at --timeout %s; give more time with --timeout (0: no bound)", te.TaskID, t.timeout)
	}
	return fmt.Errorf("the task ended without a result: %w", te)
}

// connect opens the client. Over HTTP without a fixed bearer token, the
// tokens cached by an earlier --login are presented (and refreshed), and
// with --login the user authorizes in the browser when the server asks.
func (t *target) connect(ctx context.Context, opts client.Options, stderr io.Writer) (*client.Client, error) {
	if opts.ClientInfo.Name == "" {
		opts.ClientInfo = client.Implementation{Name: "weft-cli", Version: cliVersion()}
	}
	opts.ProtocolVersion = t.protocol
	if t.command != "" {
		words := t.argv
		if words == nil {
			var err error
			if words, err = splitCommand(t.command); err != nil {
				return nil, err
			}
		}
		cmd := exec.Command(words[0], words[1:]...)
		cmd.Stderr = stderr
		if len(t.env) > 0 {
			cmd.Env = append(os.Environ(), t.env...)
		}
		var sopts client.StdioOptions
		if t.trace {
			sopts.WireTrace = wireTrace(stderr)
		}
		tr, err := client.CommandTransport(cmd, &sopts)
		if err != nil {
			return nil, fmt.Errorf("could not start %s: %w", t.command, err)
		}
		return client.New(tr, &opts), nil
	}
	var hopts client.HTTPOptions
	if t.trace {
		hopts.WireTrace = wireTrace(stderr)
	}
	hc := http.DefaultClient
	if t.bearer == "" && t.bearerFn == "" {
		authorized, release, err := authorizedHTTP(ctx, t.url, t.login, t.lf, stderr)
		if err != nil {
			return nil, err
		}
		t.release = release
		hc = authorized
	}
	token := t.bearer
	if t.bearerFn != "" {
		b, err := os.ReadFile(t.bearerFn)
		if err != nil {
			return nil, fmt.Errorf("reading --bearer-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	hopts.BearerToken = token
	if len(t.headers) > 0 {
		hs := t.headers
		hopts.Header = func(ctx context.Context, h http.Header) error {
			for _, kv := range hs {
				name, value, _ := strings.Cut(kv, ": ")
				h.Add(name, value)
			}
			return nil
		}
	}
	hopts.Client = hc
	return client.New(client.NewHTTPTransport(t.url, &hopts), &opts), nil
}

// splitCommand splits a command line into words: spaces separate, and
// single or double quotes keep spaces in a word.
func splitCommand(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool
	)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case unicode.IsSpace(r):
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("--command has an unclosed %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("--command is empty")
	}
	return words, nil
}

// explainEra explains the failure of a request that exists only in
// 2026-07-28 (subscriptions/listen, the tasks extension) when the client
// speaks a 2025 revision with the server.
func (t *target) explainEra(c *client.Client, err error, what string) error {
	var rpc *client.RPCError
	if v := c.ProtocolVersion(); v < client.ProtocolVersion && errors.As(err, &rpc) && rpc.Code == client.CodeMethodNotFound {
		if t.protocol != "" {
			return fmt.Errorf("MCP %s has no %s: it needs 2026-07-28 (leave out --protocol %s if the server speaks it)", v, what, t.protocol)
		}
		return fmt.Errorf("the server at %s speaks MCP %s, which has no %s (it needs a server speaking 2026-07-28)", t.where(), v, what)
	}
	return t.explain(err, what)
}

// explain turns a client error into what happened, in the user's terms.
func (t *target) explain(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, errSamplingRefused) {
		return errSamplingRefused
	}
	if errors.Is(err, oauth.ErrInteractionRequired) {
		return fmt.Errorf("the server at %s needs authorization again (the sign-in weft cached for it no longer works): run the command again with --login", t.where())
	}
	switch {
	case errors.Is(err, client.ErrLegacyServer):
		return fmt.Errorf("the server at %s speaks only the 2025 era of MCP (initialize), not --protocol %s: leave out --protocol, or give --protocol 2025-11-25 (it answered: %v)", t.where(), t.protocol, errors.Unwrap(err))
	case errors.Is(err, client.ErrModernServer):
		return fmt.Errorf("the server at %s speaks only MCP 2026-07-28, not --protocol %s: leave out --protocol (%v)", t.where(), t.protocol, err)
	}
	var rpc *client.RPCError
	if errors.As(err, &rpc) && (rpc.HTTPStatus == http.StatusUnauthorized || rpc.HTTPStatus == http.StatusForbidden) {
		// A refusal at the HTTP layer with a JSON-RPC body: what matters
		// is the status.
		return t.explain(&client.HTTPError{StatusCode: rpc.HTTPStatus}, what)
	}
	if errors.As(err, &rpc) {
		switch rpc.Code {
		case client.CodeMethodNotFound:
			return fmt.Errorf("the server does not offer %s (it answered %q, code %d)", what, rpc.Message, rpc.Code)
		}
		return fmt.Errorf("the server refused the request: %s (code %d)", rpc.Message, rpc.Code)
	}
	var herr *client.HTTPError
	if errors.As(err, &herr) {
		switch herr.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("the server at %s needs authorization (HTTP 401): run the command again with --login, or give a token with --bearer-file", t.where())
		case http.StatusForbidden:
			next := "sign in again with --login, or give a token that has it"
			if !t.login && t.bearer == "" && t.bearerFn == "" {
				next = "run the command again with --login, or give a token that has it with --bearer-file"
			}
			if chs, err := oauth.ParseChallenges(herr.Header); err == nil {
				if ch, ok := oauth.FindChallenge(chs, "DPoP", "Bearer"); ok && ch.Param("error") == "insufficient_scope" {
					if sc := ch.Param("scope"); sc != "" {
						return fmt.Errorf("the server at %s refused this token (HTTP 403): it needs scope %q; %s", t.where(), sc, next)
					}
				}
			}
			return fmt.Errorf("the server at %s refused this token (HTTP 403): it may lack a scope; %s", t.where(), next)
		case http.StatusNotFound:
			return fmt.Errorf("nothing answers MCP at %s (HTTP 404): check the path (often /mcp)", t.where())
		}
		return fmt.Errorf("the server at %s answered HTTP %d: %w", t.where(), herr.StatusCode, err)
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("could not reach the server: nothing listens at %s (is it running?)", t.where())
	case errors.As(err, &dnsErr):
		return fmt.Errorf("could not reach the server: the host of %s is unknown", t.where())
	case errors.As(err, &opErr):
		return fmt.Errorf("could not reach the server at %s: %w", t.where(), err)
	case errors.Is(err, client.ErrClosed) && t.command != "":
		return fmt.Errorf("the server started by %q exited or closed its output (its messages are above)", t.command)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the server at %s did not answer in time", t.where())
	}
	return err
}

// protoCmd is the shape of the simple protocol commands: parse the
// target and the command's own flags, connect, run.
func protoCmd(ctx context.Context, doc helpDoc, args []string, stdin io.Reader, stdout, stderr io.Writer,
	flags func(fs *flag.FlagSet), nargs int, argNames string,
	run func(ctx context.Context, t *target, c *client.Client, pos []string) error) error {
	fs := newFlags(doc.name)
	t := addTarget(fs)
	if flags != nil {
		flags(fs)
	}
	pos, err := parseFlags(fs, doc, args, stdout)
	if err != nil {
		return err
	}
	if pos, err = t.resolve(doc, pos); err != nil {
		return err
	}
	if nargs >= 0 && len(pos) != nargs {
		return usageError(doc, fmt.Errorf("%s needs %s after the server, got %d arguments", doc.name, argNames, len(pos)))
	}
	def := defaultCLITimeout
	if doc.name == listenDoc.name {
		def = 0
	}
	ctx, cancel := t.bound(ctx, fs, def)
	defer cancel()
	c, term, err := t.open(ctx, stdin, stdout, stderr)
	if err != nil {
		return err
	}
	defer t.close(c)
	err = run(ctx, t, c, pos)
	term.endProgress()
	if err != nil {
		return t.timedOut(ctx, err)
	}
	return nil
}

// timedOut says so when err ended the command at its --timeout, or at
// Ctrl-C.
func (t *target) timedOut(ctx context.Context, err error) error {
	switch {
	case context.Cause(ctx) == errCLITimeout:
		return fmt.Errorf("the server at %s did not finish answering within %s; give more time with --timeout (0: no bound)", t.where(), t.timeout)
	case ctx.Err() != nil:
		return errors.New("interrupted (the server was told to cancel the request)")
	}
	return err
}

// printJSON writes v as one line of JSON.
func printJSON(w io.Writer, v exactjson.Value) error {
	_, err := fmt.Fprintln(w, v.String())
	return err
}

func discoverCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return protoCmd(ctx, discoverDoc, args, stdin, stdout, stderr, nil, 0, "nothing",
		func(ctx context.Context, t *target, c *client.Client, _ []string) error {
			d, err := c.Discover(ctx)
			if err != nil {
				return t.explain(err, "server/discover")
			}
			if t.json {
				return printJSON(stdout, d.Raw)
			}
			name, version := "", ""
			if v, ok := d.ServerInfo.Get("name"); ok {
				name, _ = v.AsString()
			}
			if v, ok := d.ServerInfo.Get("version"); ok {
				version, _ = v.AsString()
			}
			fmt.Fprintf(stdout, "server        %s %s\n", name, version)
			fmt.Fprintf(stdout, "versions      %s\n", strings.Join(d.SupportedVersions, ", "))
			var caps []string
			for k := range d.Capabilities.All() {
				caps = append(caps, k)
			}
			fmt.Fprintf(stdout, "capabilities  %s\n", strings.Join(caps, ", "))
			if ext, ok := d.Capabilities.Get("extensions"); ok {
				var ids []string
				for k := range ext.All() {
					ids = append(ids, k)
				}
				fmt.Fprintf(stdout, "extensions    %s\n", strings.Join(ids, ", "))
			}
			if d.Instructions != "" {
				fmt.Fprintf(stdout, "instructions  %s\n", d.Instructions)
			}
			return nil
		})
}

func toolsCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return protoCmd(ctx, toolsDoc, args, stdin, stdout, stderr, nil, 0, "nothing",
		func(ctx context.Context, t *target, c *client.Client, _ []string) error {
			tools, err := c.ListTools(ctx)
			if err != nil {
				return t.explain(err, "tools")
			}
			if t.json {
				vs := make([]exactjson.Value, len(tools))
				for i, tl := range tools {
					vs[i] = tl.Raw
				}
				return printJSON(stdout, exactjson.Array(vs...))
			}
			if len(tools) == 0 {
				fmt.Fprintln(stdout, "The server offers no tools.")
				return nil
			}
			for _, tl := range tools {
				fmt.Fprintf(stdout, "%-28s %s\n", tl.Name, oneLine(tl.Description))
				printParams(stdout, schemaParams(tl.InputSchema))
			}
			return nil
		})
}

// listCmd lists prompts, resources or templates.
func listCmd(ctx context.Context, doc helpDoc, what string, list func(*client.Client, context.Context) ([]exactjson.Value, error),
	line func(v exactjson.Value) string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return protoCmd(ctx, doc, args, stdin, stdout, stderr, nil, 0, "nothing",
		func(ctx context.Context, t *target, c *client.Client, _ []string) error {
			items, err := list(c, ctx)
			if err != nil {
				return t.explain(err, what)
			}
			if t.json {
				return printJSON(stdout, exactjson.Array(items...))
			}
			if len(items) == 0 {
				fmt.Fprintf(stdout, "The server offers no %s.\n", what)
				return nil
			}
			for _, it := range items {
				fmt.Fprintln(stdout, line(it))
			}
			return nil
		})
}

func str(v exactjson.Value, name string) string {
	f, ok := v.Get(name)
	if !ok {
		return ""
	}
	s, _ := f.AsString()
	return s
}

// oneLine keeps the first line of a description.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func promptsCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return listCmd(ctx, promptsDoc, "prompts", (*client.Client).ListPrompts, func(p exactjson.Value) string {
		var as []string
		if args, ok := p.Get("arguments"); ok {
			for a := range args.Values() {
				name := str(a, "name")
				if r, ok := a.Get("required"); ok {
					if b, _ := r.AsBool(); b {
						name += "*"
					}
				}
				as = append(as, name)
			}
		}
		s := fmt.Sprintf("%-28s %s", str(p, "name"), oneLine(str(p, "description")))
		if len(as) > 0 {
			s += "\n" + strings.Repeat(" ", 29) + "arguments: " + strings.Join(as, ", ") + " (* required)"
		}
		return s
	}, args, stdin, stdout, stderr)
}

func resourcesCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return listCmd(ctx, resourcesDoc, "resources", (*client.Client).ListResources, func(r exactjson.Value) string {
		return fmt.Sprintf("%-40s %-16s %s", str(r, "uri"), str(r, "mimeType"), oneLine(str(r, "description")))
	}, args, stdin, stdout, stderr)
}

func templatesCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return listCmd(ctx, templatesDoc, "resource templates", (*client.Client).ListResourceTemplates, func(r exactjson.Value) string {
		return fmt.Sprintf("%-40s %-16s %s", str(r, "uriTemplate"), str(r, "mimeType"), oneLine(str(r, "description")))
	}, args, stdin, stdout, stderr)
}

// argList is a repeatable --arg NAME=VALUE flag.
type argList map[string]string

func (a argList) String() string { return "" }

func (a argList) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("an argument is NAME=VALUE, got %q", v)
	}
	if _, dup := a[name]; dup {
		return fmt.Errorf("argument %q is given twice", name)
	}
	a[name] = value
	return nil
}

func promptCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	pargs := argList{}
	return protoCmd(ctx, promptDoc, args, stdin, stdout, stderr, func(fs *flag.FlagSet) {
		fs.Var(pargs, "arg", "a prompt argument, `NAME=VALUE` (repeatable)")
	}, 1, "the prompt's name", func(ctx context.Context, t *target, c *client.Client, pos []string) error {
		res, err := c.GetPrompt(ctx, pos[0], pargs)
		if err != nil {
			return t.explain(err, "prompts")
		}
		if t.json {
			return printJSON(stdout, res.Raw)
		}
		if res.Description != "" {
			fmt.Fprintf(stdout, "# %s\n", res.Description)
		}
		for _, m := range res.Messages {
			fmt.Fprintf(stdout, "[%s]\n%s\n", m.Role, m.Content.Text)
		}
		return nil
	})
}

func readCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return protoCmd(ctx, readDoc, args, stdin, stdout, stderr, nil, 1, "the resource's URI",
		func(ctx context.Context, t *target, c *client.Client, pos []string) error {
			res, err := c.ReadResource(ctx, pos[0])
			if err != nil {
				return t.explain(err, "resources")
			}
			if t.json {
				return printJSON(stdout, res.Raw)
			}
			for _, rc := range res.Contents {
				if rc.Text != "" || rc.Blob == "" {
					fmt.Fprint(stdout, rc.Text)
					if !strings.HasSuffix(rc.Text, "\n") {
						fmt.Fprintln(stdout)
					}
					continue
				}
				fmt.Fprintf(stdout, "[%s: %d bytes of base64 data, shown with --json]\n", rc.MimeType, len(rc.Blob))
			}
			return nil
		})
}

func completeCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var prompt, resource string
	return protoCmd(ctx, completeDoc, args, stdin, stdout, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&prompt, "prompt", "", "complete an argument of prompt `NAME`")
		fs.StringVar(&resource, "resource", "", "complete a variable of `URI-TEMPLATE`")
	}, 2, "the argument (or variable) and the value typed so far", func(ctx context.Context, t *target, c *client.Client, pos []string) error {
		var ref client.Ref
		switch {
		case prompt != "" && resource == "":
			ref = client.PromptRef(prompt)
		case resource != "" && prompt == "":
			ref = client.ResourceRef(resource)
		default:
			return usageError(completeDoc, errors.New("give exactly one of --prompt and --resource"))
		}
		comp, err := c.Complete(ctx, ref, pos[0], pos[1], nil)
		if err != nil {
			return t.explain(err, "completion")
		}
		if t.json {
			vs := make([]exactjson.Value, len(comp.Values))
			for i, v := range comp.Values {
				vs[i] = exactjson.String(v)
			}
			return printJSON(stdout, exactjson.Object(exactjson.Field("values", exactjson.Array(vs...)),
				exactjson.Field("hasMore", exactjson.Bool(comp.HasMore))))
		}
		if len(comp.Values) == 0 {
			fmt.Fprintln(stdout, "No completions.")
		}
		for _, v := range comp.Values {
			fmt.Fprintln(stdout, v)
		}
		if comp.HasMore {
			fmt.Fprintln(stdout, "(more values exist; type more to narrow them)")
		}
		return nil
	})
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func listenCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var (
		f           client.ListenFilter
		uris, tasks stringList
		count       int
	)
	return protoCmd(ctx, listenDoc, args, stdin, stdout, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&f.ToolsListChanged, "tools", false, "tool list changes")
		fs.BoolVar(&f.PromptsListChanged, "prompts", false, "prompt list changes")
		fs.BoolVar(&f.ResourcesListChanged, "resources", false, "resource list changes")
		fs.Var(&uris, "uri", "updates of the resource at `URI` (repeatable)")
		fs.Var(&tasks, "task", "status changes of task `ID` (repeatable)")
		fs.IntVar(&count, "count", 0, "stop after `N` notifications (0: until interrupted)")
	}, 0, "nothing", func(ctx context.Context, t *target, c *client.Client, _ []string) error {
		if count < 0 {
			return usageError(listenDoc, errors.New("--count must not be negative"))
		}
		f.ResourceSubscriptions, f.TaskIDs = uris, tasks
		if !f.ToolsListChanged && !f.PromptsListChanged && !f.ResourcesListChanged && len(uris) == 0 && len(tasks) == 0 {
			f.ToolsListChanged, f.PromptsListChanged, f.ResourcesListChanged = true, true, true
		}
		sub, err := c.Listen(ctx, f)
		if err != nil {
			return t.explainEra(c, err, "subscriptions/listen")
		}
		defer sub.Close()
		if !t.json {
			fmt.Fprintln(stderr, "Listening; interrupt (Ctrl-C) to stop.")
		}
		n := 0
		for note := range sub.All() {
			if t.json {
				if err := printJSON(stdout, exactjson.Object(exactjson.Field("method", exactjson.String(note.Method)),
					exactjson.Field("params", note.Params))); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(stdout, describeNotification(note))
			}
			if n++; count > 0 && n >= count {
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil // interrupted: a normal end
		}
		if err := sub.Err(); err != nil {
			return t.explainEra(c, err, "subscriptions/listen")
		}
		return errors.New("the server ended the stream")
	})
}

// describeNotification is one line for a notification.
func describeNotification(n client.Notification) string {
	switch n.Method {
	case "notifications/tools/list_changed":
		return "tools changed (run weft tools to see them)"
	case "notifications/prompts/list_changed":
		return "prompts changed"
	case "notifications/resources/list_changed":
		return "resources changed"
	case "notifications/resources/updated":
		return "updated: " + str(n.Params, "uri")
	}
	if strings.HasPrefix(n.Method, "notifications/tasks") {
		return fmt.Sprintf("task %s: %s %s", str(n.Params, "taskId"), str(n.Params, "status"), str(n.Params, "statusMessage"))
	}
	return n.Method + " " + n.Params.String()
}

func taskCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError(taskDoc, errors.New("task needs get, follow or cancel"))
	}
	if isHelp(args[0]) {
		writeHelp(stdout, taskDoc, addTargetFlagSet())
		return errHelp
	}
	verb := args[0]
	switch verb {
	case "get", "follow", "cancel":
	default:
		return usageError(taskDoc, fmt.Errorf("unknown task command %q (get, follow or cancel)", verb))
	}
	fs := newFlags("task " + verb)
	t := addTarget(fs)
	pos, err := parseFlags(fs, taskDoc, dashArgs(fs, args[1:]), stdout)
	if err != nil {
		return err
	}
	if pos, err = t.resolve(taskDoc, pos); err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError(taskDoc, fmt.Errorf("task %s needs the task id after the server", verb))
	}
	def := defaultCLITimeout
	if verb == "follow" {
		def = 0
	}
	ctx, cancel := t.bound(ctx, fs, def)
	defer cancel()
	c, term, err := t.open(ctx, stdin, stdout, stderr)
	if err != nil {
		return err
	}
	defer t.close(c)
	err = t.task(ctx, c, term, verb, pos[0], stdout)
	return t.timedOut(ctx, err)
}

// task runs weft task VERB on task id.
func (t *target) task(ctx context.Context, c *client.Client, term *terminal, verb, id string, stdout io.Writer) error {
	switch verb {
	case "get":
		tk, err := c.GetTask(ctx, id)
		if err != nil {
			return t.explainEra(c, err, "tasks")
		}
		if t.json {
			return printJSON(stdout, tk.Raw)
		}
		fmt.Fprintf(stdout, "task     %s\nstatus   %s\n", tk.TaskID, tk.Status)
		if tk.StatusMessage != "" {
			fmt.Fprintf(stdout, "message  %s\n", tk.StatusMessage)
		}
		fmt.Fprintf(stdout, "created  %s\nupdated  %s\n", tk.CreatedAt, tk.LastUpdatedAt)
		if tk.Error != nil {
			fmt.Fprintf(stdout, "error    %s (code %d)\n", tk.Error.Message, tk.Error.Code)
		}
		if tk.Status == client.TaskInputRequired {
			fmt.Fprintf(stdout, "It waits for input: weft task follow %s %s answers it.\n", t.where(), id)
		}
		return nil
	case "cancel":
		if err := c.CancelTask(ctx, id); err != nil {
			return t.explainEra(c, err, "tasks")
		}
		fmt.Fprintf(stdout, "Asked the server to cancel task %s.\n", id)
		return nil
	}
	res, err := c.FollowTask(ctx, id)
	term.endProgress()
	if err != nil {
		var te *client.TaskError
		if errors.As(err, &te) {
			return t.explainTask(ctx, te)
		}
		return t.explainEra(c, err, "tasks")
	}
	if t.json {
		return printJSON(stdout, res)
	}
	return printToolResult(stdout, res)
}

// dashArgs marks as positional the arguments that start with "-" but name
// no flag of fs: task ids are base64url and may start with "-".
func dashArgs(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && a != "--" && !isHelp(a) && fs.Lookup(name) == nil {
			out = append(out, "--")
		}
		out = append(out, a)
	}
	return out
}

// printToolResult prints a tools/call result given as JSON.
func printToolResult(w io.Writer, res exactjson.Value) error {
	if content, ok := res.Get("content"); ok {
		for b := range content.Values() {
			if str(b, "type") == "text" {
				fmt.Fprintln(w, str(b, "text"))
			} else {
				fmt.Fprintf(w, "[%s content]\n", str(b, "type"))
			}
		}
	}
	if e, ok := res.Get("isError"); ok {
		if b, _ := e.AsBool(); b {
			return errors.New("the tool reported an error")
		}
	}
	return nil
}

// wireTrace prints each message on w, one line each: "> " sent, "< "
// received.
func wireTrace(w io.Writer) client.WireTrace {
	var mu sync.Mutex
	return func(sent bool, msg []byte) {
		dir := "<"
		if sent {
			dir = ">"
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s %s\n", dir, bytes.TrimSpace(msg))
	}
}
