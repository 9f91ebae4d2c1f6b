package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftmcp/weft/exactjson"
	"github.com/weftmcp/weft/gateway"
)

// The fake upstream: this test binary, started with fakeEnv set, is a
// 2025-11-25 stdio server whose tools misbehave on purpose. It appends what
// it sees (its pid, cancellations) to the file named by fakeLogEnv.
//
// With fakeNoiseEnv set it also prints what the spec forbids on its stdout:
// a banner and a log line when it starts, and a line before handling each
// tool call ("chatter" prints 100 more).
const (
	fakeEnv      = "WEFT_GATEWAY_FAKE"
	fakeLogEnv   = "WEFT_GATEWAY_FAKE_LOG"
	fakeNoiseEnv = "WEFT_GATEWAY_FAKE_NOISE"
	// fakeTasksEnv adds 2025-11-25 tasks (capabilities.tasks) and the
	// task tools (see fakeTask).
	fakeTasksEnv = "WEFT_GATEWAY_FAKE_TASKS"
)

// fakeTask is a task of the fake (fakeTasksEnv). Its tool decides its
// course: "slowtask" works until cancelled; "failtask" fails at the first
// tasks/get; "asktask" needs input: its tasks/result sends an elicitation
// related to the task and completes with the answer; "crashtask" makes the
// process exit at the second tasks/get.
type fakeTask struct {
	id, tool, status, message string
	polls                     int
}

func (ft *fakeTask) json() string {
	msg := ""
	if ft.message != "" {
		msg = fmt.Sprintf(`,"statusMessage":%q`, ft.message)
	}
	return fmt.Sprintf(`{"taskId":%q,"status":%q%s,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00.5Z","ttl":null,"pollInterval":20}`,
		ft.id, ft.status, msg)
}

func fakeUpstream(t *testing.T, name string) (gateway.UpstreamConfig, string) {
	t.Helper()
	log := t.TempDir() + "/fake.log"
	return gateway.UpstreamConfig{Name: name, Command: os.Args[0], Protocol: gateway.Version20251125,
		Env: map[string]string{fakeEnv: "1", fakeLogEnv: log}}, log
}

func runFake(stdin io.Reader, stdout io.Writer) int {
	var wmu sync.Mutex
	logf := func(format string, args ...any) {
		f, err := os.OpenFile(os.Getenv(fakeLogEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, format+"\n", args...)
			f.Close()
		}
	}
	logf("pid %d", os.Getpid())
	write := func(s string) {
		wmu.Lock()
		defer wmu.Unlock()
		fmt.Fprintln(stdout, s)
	}
	// Answers to the fake's own requests, by id.
	var amu sync.Mutex
	answers := map[string]chan exactjson.Value{}
	// askMsg sends a request and returns the whole answer.
	askMsg := func(id, method, params string) exactjson.Value {
		ch := make(chan exactjson.Value, 1)
		amu.Lock()
		answers[id] = ch
		amu.Unlock()
		write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, id, method, params))
		return <-ch
	}
	ask := func(id, method, params string) exactjson.Value {
		r, _ := askMsg(id, method, params).Get("result")
		return r
	}
	// stray: a "stray" call was refused an answer; the next echo on this
	// process is preceded by the question the server still asks for it.
	var stray atomic.Bool
	tools := `{"tools":[` +
		`{"name":"echo","description":"Echoes.","inputSchema":{"type":"object"}},` +
		`{"name":"crash","description":"Exits mid-call.","inputSchema":{"type":"object"}},` +
		`{"name":"garbage","description":"Writes garbage.","inputSchema":{"type":"object"}},` +
		`{"name":"hang","description":"Never answers.","inputSchema":{"type":"object"}},` +
		`{"name":"ask","description":"Asks twice.","inputSchema":{"type":"object"}},` +
		`{"name":"stray","description":"Asks; refused, asks again during the next echo.","inputSchema":{"type":"object"}},` +
		`{"name":"askwork","description":"Asks once, then works until cancelled.","inputSchema":{"type":"object"}},` +
		`{"name":"sample","description":"Samples and lists roots.","inputSchema":{"type":"object"}},` +
		`{"name":"link","description":"Reports progress around a URL elicitation and its completion.","inputSchema":{"type":"object"}},` +
		`{"name":"needsurl","description":"Refuses its first call with URL elicitation required.","inputSchema":{"type":"object"}}]}`
	noisy := os.Getenv(fakeNoiseEnv) != ""
	withTasks := os.Getenv(fakeTasksEnv) != ""
	caps := `{"tools":{"listChanged":true},"resources":{"subscribe":true}}`
	var tmu sync.Mutex
	tasks := map[string]*fakeTask{}
	if withTasks {
		caps = `{"tools":{"listChanged":true},"resources":{"subscribe":true},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}`
		tools = strings.TrimSuffix(tools, "]}") +
			`,{"name":"slowtask","description":"Works until cancelled.","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}` +
			`,{"name":"failtask","description":"Fails.","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}` +
			`,{"name":"asktask","description":"Asks in its task.","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}` +
			`,{"name":"crashtask","description":"Exits during its task.","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}` +
			`,{"name":"urltask","description":"Asks for a URL interaction in its task.","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`
	}
	if noisy {
		tools = strings.TrimSuffix(tools, "]}") +
			`,{"name":"chatter","description":"Answers after 100 lines of noise.","inputSchema":{"type":"object"}}]}`
		write("Fake MCP server 1.0 starting (stdio)")
		write(`{"level":"info","msg":"ready"}`)
	}
	br := bufio.NewReader(stdin)
	seq := 0
	urlCalls := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			logf("eof")
			return 0
		}
		v, perr := exactjson.Parse([]byte(line), exactjson.Limits{})
		if perr != nil {
			continue
		}
		id, _ := v.Get("id")
		idJSON := id.String()
		mv, hasMethod := v.Get("method")
		method, _ := mv.AsString()
		params, _ := v.Get("params")
		if !hasMethod { // an answer to one of our requests
			amu.Lock()
			ch := answers[strings.Trim(idJSON, `"`)]
			amu.Unlock()
			if ch != nil {
				ch <- v
			}
			continue
		}
		switch method {
		case "initialize":
			pv, _ := params.Get("protocolVersion")
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%s,"capabilities":%s,"serverInfo":{"name":"fake","version":"1"}}}`, idJSON, pv.String(), caps))
		case "tasks/get", "tasks/result", "tasks/cancel":
			tid, _ := params.Get("taskId")
			tidS, _ := tid.AsString()
			tmu.Lock()
			ft := tasks[tidS]
			if ft == nil {
				tmu.Unlock()
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"Task not found"}}`, idJSON))
				continue
			}
			switch method {
			case "tasks/get":
				ft.polls++
				switch {
				case ft.status != "working":
				case ft.tool == "failtask":
					ft.status, ft.message = "failed", "boom"
				case ft.tool == "asktask" || ft.tool == "urltask":
					ft.status = "input_required"
				case ft.tool == "crashtask" && ft.polls >= 2:
					logf("crashtask exits")
					os.Exit(3)
				}
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, idJSON, ft.json()))
			case "tasks/cancel":
				logf("task cancelled %s", ft.tool)
				ft.status = "cancelled"
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, idJSON, ft.json()))
			case "tasks/result":
				if ft.tool != "asktask" && ft.tool != "urltask" || ft.status != "input_required" {
					write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"The task has no result"}}`, idJSON))
					break
				}
				related := fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/related-task":{"taskId":%q}}`, ft.id)
				asking := `{"mode":"form","message":"proceed?","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}},` + related + `}`
				if ft.tool == "urltask" {
					asking = `{"mode":"url","message":"Connect.","url":"https://elsewhere.example/connect","elicitationId":"e1",` + related + `}`
				}
				go func(idJSON string) {
					r := ask("t"+ft.id, "elicitation/create", asking)
					text := "refused"
					if !r.IsNull() {
						c, _ := r.Get("content")
						a, _ := c.Get("answer")
						text = "asked " + a.String()
					}
					tmu.Lock()
					ft.status = "completed"
					tmu.Unlock()
					write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}],%s}}`, idJSON, text, related))
				}(idJSON)
			}
			tmu.Unlock()
		case "notifications/initialized":
		case "notifications/cancelled":
			rid, _ := params.Get("requestId")
			logf("cancelled %s", rid.String())
		case "resources/list":
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"resources":[{"uri":"fake://status","name":"status"}]}}`, idJSON))
		case "resources/templates/list":
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"resourceTemplates":[]}}`, idJSON))
		case "resources/subscribe":
			uri, _ := params.Get("uri")
			logf("subscribe %s", uri.String())
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, idJSON))
			go func() { // the resource changes all the time
				for range time.Tick(50 * time.Millisecond) {
					write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":%s}}`, uri.String()))
				}
			}()
		case "tools/list":
			write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, idJSON, tools))
		case "tools/call":
			nv, _ := params.Get("name")
			name, _ := nv.AsString()
			args, _ := params.Get("arguments")
			logf("call %s %s", name, idJSON)
			if noisy {
				write("handling " + name)
			}
			if tp, ok := params.Get("task"); ok && withTasks && tp.Kind() == exactjson.KindObject {
				switch name {
				case "slowtask", "failtask", "asktask", "crashtask", "urltask":
					tmu.Lock()
					ft := &fakeTask{id: fmt.Sprintf("task-%d", len(tasks)+1), tool: name, status: "working"}
					tasks[ft.id] = ft
					tmu.Unlock()
					write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"task":%s}}`, idJSON, ft.json()))
					continue
				}
			}
			switch name {
			case "failtask":
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"in line"}]}}`, idJSON))
			case "chatter":
				for i := range 100 {
					if !noisy {
						break
					}
					write(fmt.Sprintf("chatter %d", i))
				}
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"chattered"}]}}`, idJSON))
			case "echo":
				if stray.CompareAndSwap(true, false) {
					// The question of the abandoned "stray" call, sent while
					// this call runs: it names no call, so it goes to this
					// one unless the gateway keeps the two apart.
					go func(idJSON string) {
						a := askMsg("stray-"+idJSON, "elicitation/create", `{"mode":"form","message":"stray question of an abandoned call","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}}}`)
						logf("stray answered %s", a.String())
						write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, idJSON, args.String()))
					}(idJSON)
					break
				}
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, idJSON, args.String()))
			case "crash":
				os.Exit(3)
			case "garbage":
				write("this is not JSON")
			case "hang":
			case "needsurl":
				urlCalls++
				if urlCalls == 1 {
					write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32042,"message":"Connect your account first.","data":{"elicitations":[{"mode":"url","elicitationId":"c1","url":"https://example.com/connect","message":"Connect your account."}]}}}`, idJSON))
					write(`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"c1"}}`)
				} else {
					write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"connected after %d calls"}]}}`, idJSON, urlCalls))
				}
			case "link":
				// Progress 1 in round 0, a URL elicitation, then its
				// completion and progress 2 and 3 in round 1.
				meta, _ := params.Get("_meta")
				tok, _ := meta.Get("progressToken")
				progress := func(n int) {
					write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":3}}`, tok.String(), n))
				}
				seq++
				base := strconv.Itoa(seq)
				go func(idJSON string) {
					progress(1)
					r := ask("u"+base, "elicitation/create", `{"mode":"url","message":"Connect your account.","url":"https://example.com/connect","elicitationId":"el-`+base+`"}`)
					a, _ := r.Get("action")
					write(`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"el-` + base + `"}}`)
					progress(2)
					progress(3)
					write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, idJSON, "linked "+a.String()))
				}(idJSON)
			case "stray":
				// Asks once; refused an answer (the gateway gave up on the
				// call), it asks again later, during the next echo.
				seq++
				base := strconv.Itoa(seq)
				go func() {
					if _, ok := askMsg("x"+base, "elicitation/create", `{"mode":"form","message":"first","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}}}`).Get("result"); !ok {
						logf("stray refused")
						stray.Store(true)
					}
				}()
			case "askwork":
				seq++
				base := strconv.Itoa(seq)
				go func() {
					ask("w"+base, "elicitation/create", `{"mode":"form","message":"go?","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}}}`)
					logf("askwork answered")
				}()
			case "ask", "sample":
				seq++
				base := strconv.Itoa(seq)
				go func(idJSON string) {
					var texts []string
					if name == "ask" {
						for i, q := range []string{"first", "second"} {
							r := ask("e"+base+"-"+strconv.Itoa(i), "elicitation/create",
								fmt.Sprintf(`{"mode":"form","message":%q,"requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}}}`, q))
							c, _ := r.Get("content")
							a, _ := c.Get("answer")
							texts = append(texts, a.String())
						}
					} else {
						r := ask("s"+base, "sampling/createMessage", `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}`)
						c, _ := r.Get("content")
						texts = append(texts, c.String())
						r = ask("r"+base, "roots/list", `{}`)
						texts = append(texts, r.String())
					}
					write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, idJSON, strings.Join(texts, " ")))
				}(idJSON)
			}
		default:
			if !id.IsNull() {
				write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, idJSON))
			}
		}
	}
}

// readLog returns the fake's log.
func readLog(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

// waitFor polls cond until it holds or the test's patience ends.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
