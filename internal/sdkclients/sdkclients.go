// Package sdkclients runs the official SDKs' 2025-11-25 clients over stdio
// against a server command in tests, to check what the server sends outside
// a request: gosdkstdio (the Go SDK v1.8.0, its own module) and
// tsstdio/events.mjs (the TypeScript SDK v2, @modelcontextprotocol/client).
// Both subscribe to a resource, have the server change it, the tool list
// and the prompt list through tools, unsubscribe, and report which
// notifications their handlers received. gosdkhttp (the Go SDK v1.8.0 over
// Streamable HTTP with a bearer token) is driven command by command.
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

// Names are the resources and the tools a scenario uses.
type Names struct {
	Resource string // the resource subscribed to, then unsubscribed from
	// Keep, when set, is a resource that stays subscribed, for a server
	// that announces updates at its own pace once Update is called (the
	// Go SDK client only).
	Keep         string
	Update       string // the tool that announces a change of Resource (or starts the announcements)
	ToolChange   string // the tool that changes the tool list ("": none)
	PromptChange string // the tool that changes the prompt list ("": none)
}

// Conformance names the fixtures of cmd/weft-conformance.
func Conformance() Names {
	return Names{
		Resource:     "test://watched-resource",
		Update:       "test_update_watched_resource",
		ToolChange:   "test_trigger_tool_change",
		PromptChange: "test_trigger_prompt_change",
	}
}

// Events is what a client heard.
type Events struct {
	ProtocolVersion         string         `json:"protocolVersion"`
	Capabilities            map[string]any `json:"capabilities"`
	Updated                 []string       `json:"updated"`
	UpdatedAfterUnsubscribe []string       `json:"updatedAfterUnsubscribe"`
	KeptAfterUnsubscribe    int            `json:"keptAfterUnsubscribe"`
	ToolsListChanged        int            `json:"toolsListChanged"`
	PromptsListChanged      int            `json:"promptsListChanged"`
}

// Check fails t unless the client negotiated 2025-11-25, was promised the
// notifications (tools and prompts listChanged, resources subscribe), heard
// the updates of the subscribed resources (Resource once, or with Keep at
// least once, and Keep twice after the unsubscribe) and each list change it
// caused once, and heard no update of Resource after it unsubscribed.
func (e Events) Check(t testing.TB, names Names) {
	t.Helper()
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
	if names.Keep == "" {
		if !slices.Equal(e.Updated, []string{names.Resource}) {
			t.Errorf("resource updates heard while subscribed: %q, want [%q]", e.Updated, names.Resource)
		}
	} else {
		for _, want := range []string{names.Resource, names.Keep} {
			if !slices.Contains(e.Updated, want) {
				t.Errorf("resource updates heard while subscribed: %q, none of %q", e.Updated, want)
			}
		}
		if i := slices.IndexFunc(e.Updated, func(u string) bool { return u != names.Resource && u != names.Keep }); i >= 0 {
			t.Errorf("an update of %q, which was never subscribed to", e.Updated[i])
		}
		if e.KeptAfterUnsubscribe < 2 {
			t.Errorf("heard %d updates of %q after the unsubscribe, want 2", e.KeptAfterUnsubscribe, names.Keep)
		}
	}
	if len(e.UpdatedAfterUnsubscribe) != 0 {
		t.Errorf("resource updates heard after unsubscribe: %q", e.UpdatedAfterUnsubscribe)
	}
	wantChanges := func(tool string) int {
		if tool == "" {
			return 0
		}
		return 1
	}
	if e.ToolsListChanged != wantChanges(names.ToolChange) || e.PromptsListChanged != wantChanges(names.PromptChange) {
		t.Errorf("heard %d tools and %d prompts list changes, want %d and %d", e.ToolsListChanged, e.PromptsListChanged,
			wantChanges(names.ToolChange), wantChanges(names.PromptChange))
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
	bin := filepath.Join(t.TempDir(), "gosdkstdio")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(dir(t), "gosdkstdio")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Go SDK client: %v\n%s", err, out)
	}
	args := append([]string{"-resource", names.Resource, "-keep", names.Keep, "-update", names.Update,
		"-tool-change", names.ToolChange, "-prompt-change", names.PromptChange}, server...)
	return run(t, exec.Command(bin, args...))
}

// TypeScript runs the TypeScript SDK v2 client against the stdio server
// command server. Node and npm are required in CI (see nodetest).
func TypeScript(t testing.TB, names Names, server ...string) Events {
	t.Helper()
	if names.Keep != "" || names.ToolChange == "" || names.PromptChange == "" {
		t.Fatal("sdkclients: the TypeScript client runs the scenario of a server that announces every change on a call")
	}
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

// GoSDKHTTP builds gosdkhttp, the Go SDK v1.8.0 client a test drives over
// Streamable HTTP with a bearer token (see its doc comment), and returns
// the binary's path.
func GoSDKHTTP(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gosdkhttp")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(dir(t), "gosdkhttp")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Go SDK HTTP client: %v\n%s", err, out)
	}
	return bin
}
