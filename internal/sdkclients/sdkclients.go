// Package sdkclients runs the official SDKs' 2025-11-25 clients over stdio
// against a server command in tests, to check what the server sends outside
// a request: gosdkstdio (the Go SDK v1.8.0, its own module) and
// tsstdio/events.mjs (the TypeScript SDK v2, @modelcontextprotocol/client).
// Both subscribe to a resource, have the server change it, the tool list
// and the prompt list through tools, unsubscribe, and report which
// notifications their handlers received.
package sdkclients

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/weftmcp/weft/internal/nodetest"
)

// Names are the resource and the tools a scenario uses; the zero value
// names the fixtures of cmd/weft-conformance.
type Names struct {
	Resource     string // the resource subscribed to
	Update       string // the tool that announces a change of Resource
	ToolChange   string // the tool that changes the tool list
	PromptChange string // the tool that changes the prompt list
}

func (n Names) withDefaults() Names {
	if n.Resource == "" {
		n.Resource = "test://watched-resource"
	}
	if n.Update == "" {
		n.Update = "test_update_watched_resource"
	}
	if n.ToolChange == "" {
		n.ToolChange = "test_trigger_tool_change"
	}
	if n.PromptChange == "" {
		n.PromptChange = "test_trigger_prompt_change"
	}
	return n
}

// Events is what a client heard.
type Events struct {
	ProtocolVersion         string         `json:"protocolVersion"`
	Capabilities            map[string]any `json:"capabilities"`
	Updated                 []string       `json:"updated"`
	UpdatedAfterUnsubscribe []string       `json:"updatedAfterUnsubscribe"`
	ToolsListChanged        int            `json:"toolsListChanged"`
	PromptsListChanged      int            `json:"promptsListChanged"`
}

// Check fails t unless the client negotiated 2025-11-25, was promised the
// notifications (tools and prompts listChanged, resources subscribe), heard
// the update of the subscribed resource once and the list changes, and
// heard no update after it unsubscribed.
func (e Events) Check(t testing.TB, names Names) {
	t.Helper()
	names = names.withDefaults()
	claims := func(list, flag string) bool {
		c, _ := e.Capabilities[list].(map[string]any)
		return c[flag] == true
	}
	switch {
	case e.ProtocolVersion != "2025-11-25":
		t.Errorf("negotiated %q, want 2025-11-25", e.ProtocolVersion)
	case !claims("tools", "listChanged") || !claims("prompts", "listChanged") || !claims("resources", "subscribe"):
		t.Errorf("capabilities %v do not promise the notifications", e.Capabilities)
	}
	if !slices.Equal(e.Updated, []string{names.Resource}) {
		t.Errorf("resource updates heard while subscribed: %q, want [%q]", e.Updated, names.Resource)
	}
	if len(e.UpdatedAfterUnsubscribe) != 0 {
		t.Errorf("resource updates heard after unsubscribe: %q", e.UpdatedAfterUnsubscribe)
	}
	if e.ToolsListChanged != 1 || e.PromptsListChanged != 1 {
		t.Errorf("heard %d tools and %d prompts list changes, want 1 and 1", e.ToolsListChanged, e.PromptsListChanged)
	}
}

// dir is the directory of this package's sources.
func dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("sdkclients: cannot locate its sources")
	}
	return filepath.Dir(file)
}

// GoSDK runs the Go SDK client against the stdio server command server.
func GoSDK(t testing.TB, names Names, server ...string) Events {
	t.Helper()
	names = names.withDefaults()
	bin := filepath.Join(t.TempDir(), "gosdkstdio")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(dir(t), "gosdkstdio")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Go SDK client: %v\n%s", err, out)
	}
	args := append([]string{"-resource", names.Resource, "-update", names.Update,
		"-tool-change", names.ToolChange, "-prompt-change", names.PromptChange}, server...)
	return run(t, exec.Command(bin, args...))
}

// TypeScript runs the TypeScript SDK v2 client against the stdio server
// command server. Node and npm are required in CI (see nodetest).
func TypeScript(t testing.TB, names Names, server ...string) Events {
	t.Helper()
	names = names.withDefaults()
	node := nodetest.Node(t)
	work := nodetest.Install(t, filepath.Join(dir(t), "tsstdio"))
	cmd := exec.Command(node, append([]string{"events.mjs"}, server...)...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "RESOURCE="+names.Resource, "UPDATE="+names.Update,
		"TOOL_CHANGE="+names.ToolChange, "PROMPT_CHANGE="+names.PromptChange)
	return run(t, cmd)
}

// run runs a client, bounded in time, and decodes its report.
func run(t testing.TB, cmd *exec.Cmd) Events {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute): // a guard against a hang, not a speed check
		_ = cmd.Process.Kill()
		err = <-done
		t.Errorf("%s did not finish", cmd.Path)
	}
	if err != nil {
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", cmd.Path, cmd.Args[1:], err, stdout.Bytes(), stderr.Bytes())
	}
	var e Events
	if err := json.Unmarshal(stdout.Bytes(), &e); err != nil {
		t.Fatalf("decoding the client's report %q: %v\nstderr:\n%s", stdout.Bytes(), err, stderr.Bytes())
	}
	return e
}
