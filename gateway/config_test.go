package gateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExampleConfigsParse(t *testing.T) {
	files, _ := filepath.Glob("examples/*")
	if len(files) < 2 {
		t.Fatalf("examples: %v", files)
	}
	for _, f := range files {
		c, err := LoadConfig(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(c.Upstreams) == 0 {
			t.Errorf("%s: no upstreams", f)
		}
	}
	c, err := LoadConfig("examples/demo-stdio.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := c.Upstreams[0]
	if u.Command != "weft" || u.Protocol != Version20251125 || u.CallTimeout.D() != 30*time.Second || c.Input.Lifetime.D() != 10*time.Minute {
		t.Fatalf("demo-stdio.yaml read as %+v", c)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		doc, format, want string
	}{
		{`{}`, "json", "no upstreams"},
		{`{"upstreams":[{"name":"a"}]}`, "json", "set command"},
		{`{"upstreams":[{"name":"a","command":"x","url":"http://h/mcp"}]}`, "json", "not both"},
		{`{"upstreams":[{"name":"a b","command":"x"}]}`, "json", "must be 1-64"},
		{`{"upstreams":[{"name":"a","command":"x"},{"name":"a","command":"y"}]}`, "json", "used twice"},
		{`{"upstreams":[{"name":"a","url":"ftp://h/"}]}`, "json", "not an http"},
		{`{"upstreams":[{"name":"a","command":"x","headers":{"A":"b"}}]}`, "json", "url upstreams only"},
		{`{"upstreams":[{"name":"a","url":"http://h/","args":["x"]}]}`, "json", "command upstreams only"},
		{`{"upstreams":[{"name":"a","url":"http://h/","authorization":"forward"}]}`, "json", `authorization "forward"`},
		{`{"upstreams":[{"name":"a","url":"http://h/","authorization":"passthrough","protocol":"2025-11-25"}]}`, "json", "needs a 2026-07-28 upstream"},
		{`{"upstreams":[{"name":"a","command":"x","protocol":"2024-11-05"}]}`, "json", `protocol "2024-11-05"`},
		{`{"upstreams":[{"name":"a","command":"x","prefix":"a b"}]}`, "json", "prefix"},
		{`{"upstreams":[{"name":"a","command":"x","include":["["]}]}`, "json", "pattern"},
		{`{"upstreams":[{"name":"a","command":"x","rename":{"t":""}}]}`, "json", "rename"},
		{`{"upstreams":[{"name":"a","command":"x","callTimeout":5}]}`, "json", "duration must be a string"},
		{`{"upstreams":[{"name":"a","command":"x","callTimeout":"-1s"}]}`, "json", "negative"},
		{`{"upstreams":[{"name":"a","command":"x","comand":"y"}]}`, "json", "unknown field"},
		{`{"upstreams":[{"name":"a","command":"x"}]} {}`, "json", "trailing data"},
		{`{"upstreams":[{"name":"a","url":"http://127.0.0.1:1/mcp","oneCallPerProcess":true}]}`, "json", "oneCallPerProcess applies to command upstreams only"},
		{`{"upstreams":[{"name":"a","command":"x","sharedProcesses":true}]}`, "json", "unknown field"},
		{`{"upstreams":[{"name":"a","command":"x"}],"input":{"lifetime":"48h"}}`, "json", "outside 0..24h"},
		{`{"upstreams":[{"name":"a","command":"x"}],"input":{"maxRounds":-1}}`, "json", "maxRounds"},
		{`{"upstreams":[{"name":"a","command":"x"}],"input":{"lease":"500ms"}}`, "json", "input.lease = 500ms is outside 1s..5m0s"},
		{`{"upstreams":[{"name":"a","command":"x"}],"input":{"lease":"6m"}}`, "json", "input.lease = 6m0s is outside"},
		{`{"upstreams":[{"name":"a","command":"x"}],"input":{"lease":"2m","lifetime":"1m"}}`, "json", "exceeds input.lifetime (1m0s)"},
		{`{"upstreams":[{"name":"a","command":"x","inputs":["form","mind"]}]}`, "json", `inputs: "mind"`},
		{`{"upstreams":[{"name":"a","url":"http://h/","maxProcesses":2}]}`, "json", "command upstreams only"},
		{`{"upstreams":[{"name":"a","command":"x","maxProcesses":-1}]}`, "json", "maxProcesses"},
		{`{"upstreams":[{"name":"a","url":"http://h/","stdoutNoise":"log"}]}`, "json", "stdoutNoise apply to command upstreams only"},
		{`{"upstreams":[{"name":"a","url":"http://h/","stdoutNoise":"fail"}]}`, "json", "command upstreams only"},
		{`{"upstreams":[{"name":"a","command":"x","stdoutNoise":"ignore"}]}`, "json", `stdoutNoise "ignore": want "fail" or "log"`},
		{"upstreams:\n  - name: a\n    command: x\n    stdoutNoise: true\n", "yaml", "stdoutNoise"},
		{"upstreams: [", "yaml", "YAML"},
		{"upstreams:\n  - name: a\n    command: x\n    extra: 1\n", "yaml", `line 4: unknown field "extra"`},
		{"upstreams:\n  - name: a\n    command: x\n    maxProcesses: many\n", "yaml", "line 4: upstreams.maxProcesses: a string cannot be a int"},
		{"{\"upstreams\": [\n  {\"name\": \"a\",\n   \"comand\": \"y\"}]}", "json", `line 3: unknown field "comand"`},
		{"{\"upstreams\": [\n  {\"name\": \"a\",\n   \"maxProcesses\": \"2\"}]}", "json", "line 3: upstreams.maxProcesses: a string cannot be a int"},
		{"{\"upstreams\": [\n  {\"name\": \"a\",,\n", "json", "line 2: invalid character"},
		{`{}`, "toml", "unknown configuration format"},
	} {
		_, err := ParseConfig([]byte(tc.doc), tc.format)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%s) = %v, want an error with %q", tc.doc, err, tc.want)
		}
	}
}

func TestStdoutNoiseConfig(t *testing.T) {
	for _, tc := range []struct {
		doc, format, want string
	}{
		{`{"upstreams":[{"name":"a","command":"x"}]}`, "json", ""},
		{`{"upstreams":[{"name":"a","command":"x","stdoutNoise":"fail"}]}`, "json", StdoutNoiseFail},
		{`{"upstreams":[{"name":"a","command":"x","stdoutNoise":"log"}]}`, "json", StdoutNoiseLog},
		{"upstreams:\n  - name: a\n    command: x\n    stdoutNoise: log\n", "yaml", StdoutNoiseLog},
	} {
		c, err := ParseConfig([]byte(tc.doc), tc.format)
		if err != nil || c.Upstreams[0].StdoutNoise != tc.want {
			t.Errorf("ParseConfig(%s) = %+v, %v; want stdoutNoise %q", tc.doc, c, err, tc.want)
		}
	}
}

func TestInputLease(t *testing.T) {
	for _, tc := range []struct {
		in               InputConfig
		lease, heartbeat time.Duration
	}{
		{InputConfig{}, DefaultLease, DefaultLease / 3},
		{InputConfig{Lease: Duration(3 * time.Second)}, 3 * time.Second, time.Second},
		{InputConfig{Lifetime: Duration(6 * time.Second)}, 6 * time.Second, 2 * time.Second}, // never beyond the lifetime
	} {
		if err := (&Config{Upstreams: []UpstreamConfig{{Name: "a", Command: "x"}}, Input: tc.in}).Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", tc.in, err)
		}
		d := tc.in.withDefaults()
		if d.Lease.D() != tc.lease || d.heartbeat() != tc.heartbeat {
			t.Errorf("%+v: lease %s, heartbeat %s; want %s, %s", tc.in, d.Lease.D(), d.heartbeat(), tc.lease, tc.heartbeat)
		}
	}
}

func TestExposedName(t *testing.T) {
	u := UpstreamConfig{Prefix: "gh_", Include: []string{"issue_*", "search", "pr_*"}, Exclude: []string{"pr_merge"},
		Rename: map[string]string{"search": "github_search"}}
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"issue_create", "gh_issue_create", true},
		{"search", "github_search", true},
		{"pr_list", "gh_pr_list", true},
		{"pr_merge", "", false},
		{"repo_delete", "", false},
	} {
		got, ok := u.exposedName(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("exposedName(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestEnvExpansion(t *testing.T) {
	t.Setenv("WEFT_GATEWAY_TEST_TOKEN", "s3cret")
	if got := expand("Bearer ${WEFT_GATEWAY_TEST_TOKEN}"); got != "Bearer s3cret" {
		t.Fatalf("expand = %q", got)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"upstreams":[{"name":"a","command":"x","prefix":"p_","rename":{"t":"u"}}],"input":{"lifetime":"1m"}}`), false)
	f.Add([]byte(`{"upstreams":[{"name":"a","url":"http://h/","prefix":"p_","resourcePrefix":""},{"name":"b","command":"y","resourcePrefix":"b"}]}`), false)
	f.Add([]byte("upstreams:\n  - name: a\n    url: http://h/mcp\n"), true)
	f.Add([]byte(`{"upstreams":[{"name":"a","command":"x","stdoutNoise":"log"},{"name":"b","url":"http://h/","stdoutNoise":"fail"}]}`), false)
	f.Add([]byte("upstreams:\n  - name: a\n    command: x\n    stdoutNoise: log\n"), true)
	f.Fuzz(func(t *testing.T, doc []byte, yaml bool) {
		format := "json"
		if yaml {
			format = "yaml"
		}
		c, err := ParseConfig(doc, format)
		if err == nil && c.Validate() != nil {
			t.Fatal("ParseConfig accepted an invalid configuration")
		}
	})
}

func TestCommandEnvironment(t *testing.T) {
	t.Setenv("WEFT_GATEWAY_TEST_INHERITED", "yes")
	t.Setenv("WEFT_GATEWAY_TEST_SECRET", "s3cret")
	u := &UpstreamConfig{Command: "x", Env: map[string]string{"TOKEN": "${WEFT_GATEWAY_TEST_SECRET}"}}
	env := strings.Join(commandFor(u).Env, "\n")
	if !strings.Contains(env, "WEFT_GATEWAY_TEST_INHERITED=yes") || !strings.Contains(env, "TOKEN=s3cret") {
		t.Fatalf("environment:\n%s", env)
	}
	u.CleanEnv = true
	if got := commandFor(u).Env; len(got) != 1 || got[0] != "TOKEN=s3cret" {
		t.Fatalf("clean environment: %q", got)
	}
	u.Env = nil
	if got := commandFor(u).Env; got == nil || len(got) != 0 {
		t.Fatalf("clean, empty environment: %q", got)
	}
}

func TestURIMap(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, tc := range []struct {
		cfg           UpstreamConfig
		upstream, out string // out "" : cannot carry the prefix
	}{
		{UpstreamConfig{}, "repo://issues/1", "repo://issues/1"},
		{UpstreamConfig{}, "urn:x:y", "urn:x:y"},
		{UpstreamConfig{Prefix: "gh_"}, "repo://issues/1", "repo://gh/issues/1"},
		{UpstreamConfig{Prefix: "gh_"}, "file:///etc/hosts", "file://gh//etc/hosts"},
		{UpstreamConfig{Prefix: "gh_"}, "ui://chart", "ui://gh/chart"},
		{UpstreamConfig{Prefix: "gh_"}, "skill://pdf/SKILL.md", "skill://gh/pdf/SKILL.md"},
		{UpstreamConfig{Prefix: "gh_"}, "repo://issues/{id}", "repo://gh/issues/{id}"},
		{UpstreamConfig{Prefix: "gh_"}, "urn:x:y", ""},
		{UpstreamConfig{Prefix: "gh_"}, "{scheme}://x", ""},
		{UpstreamConfig{Prefix: "gh_"}, "://x", ""},
		{UpstreamConfig{Prefix: "billing."}, "a+b.c-d://x", "a+b.c-d://billing/x"},
		{UpstreamConfig{Prefix: "_"}, "repo://x", "repo://x"},
		{UpstreamConfig{Prefix: "gh_", ResourcePrefix: p("")}, "repo://x", "repo://x"},
		{UpstreamConfig{Prefix: "gh_", ResourcePrefix: p("hub")}, "repo://x", "repo://hub/x"},
	} {
		m := tc.cfg.uris()
		out, ok := m.out(tc.upstream)
		if ok != (tc.out != "") || out != tc.out {
			t.Errorf("%+v: out(%q) = %q %v, want %q", tc.cfg, tc.upstream, out, ok, tc.out)
			continue
		}
		if !ok {
			continue
		}
		if back, ok := m.in(out); !ok || back != tc.upstream {
			t.Errorf("%+v: in(%q) = %q %v, want %q", tc.cfg, out, back, ok, tc.upstream)
		}
	}
	m := uriMap{prefix: "gh"}
	for _, exposed := range []string{"repo://issues/1", "repo://ghx/1", "repo://gh", "urn:gh/x"} {
		if up, ok := m.in(exposed); ok {
			t.Errorf("in(%q) = %q, want not under the prefix", exposed, up)
		}
	}
	if _, err := ParseConfig([]byte(`{"upstreams":[{"name":"a","command":"x","resourcePrefix":"a/b"}]}`), "json"); err == nil || !strings.Contains(err.Error(), "resourcePrefix") {
		t.Errorf("resourcePrefix a/b: %v", err)
	}
	c, err := ParseConfig([]byte("upstreams:\n  - name: a\n    command: x\n    prefix: gh_\n    resourcePrefix: \"\"\n"), "yaml")
	if err != nil || c.Upstreams[0].ResourcePrefix == nil || *c.Upstreams[0].ResourcePrefix != "" {
		t.Fatalf("resourcePrefix \"\": %+v %v", c, err)
	}
}

// Relative paths of a configuration file are the file's (issue 27 item 5):
// a command without dir runs in the file's directory, so relative args
// name files beside it, and a relative dir is the file's too. (Before, a
// command without dir ran in the gateway's working directory.)
func TestLoadConfigRelativePaths(t *testing.T) {
	base := filepath.Join(t.TempDir(), "conf")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "gw.yaml")
	doc := "upstreams:\n" +
		"  - {name: plain, command: node, args: [./server.js]}\n" +
		"  - {name: sub, command: node, dir: data}\n" +
		"  - {name: abs, command: node, dir: /srv}\n" +
		"  - {name: web, url: 'http://127.0.0.1:1/mcp'}\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"plain": base, "sub": filepath.Join(base, "data"), "abs": "/srv", "web": ""}
	for _, u := range c.Upstreams {
		if u.Dir != want[u.Name] {
			t.Errorf("%s: dir %q, want %q", u.Name, u.Dir, want[u.Name])
		}
	}
}

// TestParseConfigUnquotedRevision: YAML reads an unquoted date as a
// timestamp; a protocol revision written plainly is still the revision, and
// so is any other value that looks like a date.
func TestParseConfigUnquotedRevision(t *testing.T) {
	for _, rev := range []string{"2025-11-25", "2025-06-18", "2026-07-28", `"2025-11-25"`} {
		c, err := ParseConfig([]byte("upstreams:\n  - name: a\n    command: srv\n    protocol: "+rev+"\n    args: [2025-01-02]\n"), "yaml")
		if err != nil {
			t.Fatalf("protocol: %s: %v", rev, err)
		}
		if u := c.Upstreams[0]; u.Protocol != strings.Trim(rev, `"`) || len(u.Args) != 1 || u.Args[0] != "2025-01-02" {
			t.Errorf("protocol: %s read as %q, args %q", rev, u.Protocol, u.Args)
		}
	}
}

// TestCompanyExampleInGuide keeps the deployment guide's configuration
// equal to examples/company.yaml, which TestExampleConfigsParse parses.
func TestCompanyExampleInGuide(t *testing.T) {
	guide, err := os.ReadFile("../docs/guides/gateway-deployment.md")
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("examples/company.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(guide), "<!-- gateway/examples/company.yaml -->\n```yaml\n")
	block, _, closed := strings.Cut(after, "```\n")
	if !ok || !closed || block != string(file) {
		t.Fatal("docs/guides/gateway-deployment.md's configuration differs from gateway/examples/company.yaml")
	}
}
