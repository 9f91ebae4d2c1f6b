// Command gosdkstdio is a 2025-11-25 client built on the official Go SDK
// (v1.8.0) that checks a stdio server's unsolicited notifications. It starts
// the server command given after its flags with the SDK's CommandTransport
// and, with its ResourceUpdatedHandler, ToolListChangedHandler and
// PromptListChangedHandler:
//
//  1. subscribes to -resource, calls -update and waits for the update;
//  2. calls -tool-change and waits for tools/list_changed;
//  3. unsubscribes, calls -update again, then -prompt-change, and waits for
//     prompts/list_changed (the server's events keep their order, so an
//     update sent after the unsubscribe would have arrived first).
//
// It prints what it heard as one JSON object and exits non-zero when a wait
// times out or a call fails.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type report struct {
	ProtocolVersion    string          `json:"protocolVersion"`
	Capabilities       json.RawMessage `json:"capabilities"`
	Updated            []string        `json:"updated"`
	UpdatedAfterUnsub  []string        `json:"updatedAfterUnsubscribe"`
	ToolsListChanged   int             `json:"toolsListChanged"`
	PromptsListChanged int             `json:"promptsListChanged"`
}

func main() {
	resource := flag.String("resource", "test://watched-resource", "the resource to subscribe to")
	update := flag.String("update", "test_update_watched_resource", "the tool that announces a change of the resource")
	toolChange := flag.String("tool-change", "test_trigger_tool_change", "the tool that changes the tool list")
	promptChange := flag.String("prompt-change", "test_trigger_prompt_change", "the tool that changes the prompt list")
	timeout := flag.Duration("timeout", 30*time.Second, "how long to wait for each notification")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: gosdkstdio [flags] SERVER-COMMAND [ARGS...]")
	}

	var (
		mu       sync.Mutex
		rep      report
		unsubbed bool
	)
	updated := make(chan string, 16)
	tools := make(chan struct{}, 16)
	prompts := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "gosdkstdio", Version: "1.0.0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			if unsubbed {
				rep.UpdatedAfterUnsub = append(rep.UpdatedAfterUnsub, r.Params.URI)
			} else {
				rep.Updated = append(rep.Updated, r.Params.URI)
			}
			mu.Unlock()
			updated <- r.Params.URI
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			mu.Lock()
			rep.ToolsListChanged++
			mu.Unlock()
			tools <- struct{}{}
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			mu.Lock()
			rep.PromptsListChanged++
			mu.Unlock()
			prompts <- struct{}{}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stderr = os.Stderr
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	rep.ProtocolVersion = init.ProtocolVersion
	if rep.Capabilities, err = json.Marshal(init.Capabilities); err != nil {
		log.Fatal(err)
	}

	call := func(name string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			log.Fatalf("tools/call %s: %v", name, err)
		}
		if res.IsError {
			log.Fatalf("tools/call %s: a tool error", name)
		}
	}
	wait := func(what string, ch <-chan struct{}) {
		select {
		case <-ch:
		case <-time.After(*timeout):
			log.Fatalf("no %s within %v", what, *timeout)
		}
	}

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: *resource}); err != nil {
		log.Fatalf("resources/subscribe: %v", err)
	}
	call(*update)
	select {
	case <-updated:
	case <-time.After(*timeout):
		log.Fatalf("no notifications/resources/updated within %v", *timeout)
	}
	call(*toolChange)
	wait("notifications/tools/list_changed", tools)

	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: *resource}); err != nil {
		log.Fatalf("resources/unsubscribe: %v", err)
	}
	mu.Lock()
	unsubbed = true
	mu.Unlock()
	call(*update)
	call(*promptChange)
	wait("notifications/prompts/list_changed", prompts)

	mu.Lock()
	out, err := json.Marshal(rep)
	mu.Unlock()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
}
