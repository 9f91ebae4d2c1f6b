// Command gosdkstdio is a 2025-11-25 client built on the official Go SDK
// (v1.8.0) that checks a stdio server's unsolicited notifications. It starts
// the server command given after its flags with the SDK's CommandTransport
// and listens with its ResourceUpdatedHandler, ToolListChangedHandler and
// PromptListChangedHandler. Without -keep (a server that announces a change
// when a tool is called):
//
//  1. subscribes to -resource, calls -update and waits for the update;
//  2. calls -tool-change and waits for tools/list_changed;
//  3. unsubscribes, calls -update again, then -prompt-change, and waits for
//     prompts/list_changed (the server's events keep their order, so an
//     update sent after the unsubscribe would have arrived first).
//
// With -keep (a server that, once -update is called, announces updates of
// what its client subscribed to at its own pace):
//
//  1. subscribes to -resource and -keep, calls -update and waits for an
//     update of each;
//  2. unsubscribes from -resource and waits for two updates of -keep: an
//     update of -resource after the first of them came after the
//     unsubscribe (one before it may have been on its way).
//
// An empty -tool-change or -prompt-change skips that step. It prints what
// it heard as one JSON object and exits non-zero when a wait times out or a
// call fails.
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
	KeptAfterUnsub     int             `json:"keptAfterUnsubscribe"`
	ToolsListChanged   int             `json:"toolsListChanged"`
	PromptsListChanged int             `json:"promptsListChanged"`
}

func main() {
	resource := flag.String("resource", "", "the resource to subscribe to")
	keep := flag.String("keep", "", "a resource that stays subscribed (the server announces updates at its own pace)")
	update := flag.String("update", "", "the tool that announces a change of the resource (or starts the announcements)")
	toolChange := flag.String("tool-change", "", "the tool that changes the tool list")
	promptChange := flag.String("prompt-change", "", "the tool that changes the prompt list")
	timeout := flag.Duration("timeout", 30*time.Second, "how long to wait for each notification")
	flag.Parse()
	if flag.NArg() == 0 || *resource == "" || *update == "" {
		log.Fatal("usage: gosdkstdio -resource URI -update TOOL [flags] SERVER-COMMAND [ARGS...]")
	}

	var (
		mu       sync.Mutex
		rep      report
		unsubbed bool
	)
	// The URIs of the updates not yet waited for (sent under mu, so the
	// unsubscribe can drop those that came before it), and the list changes.
	updated := make(chan string, 64)
	tools := make(chan struct{}, 16)
	prompts := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "gosdkstdio", Version: "1.0.0"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			uri := r.Params.URI
			mu.Lock()
			switch {
			case !unsubbed:
				rep.Updated = append(rep.Updated, uri)
			case uri == *keep && *keep != "":
				rep.KeptAfterUnsub++
			case *keep == "" || rep.KeptAfterUnsub > 0:
				rep.UpdatedAfterUnsub = append(rep.UpdatedAfterUnsub, uri)
			}
			select {
			case updated <- uri:
			default: // nobody waits for so many
			}
			mu.Unlock()
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
		if name == "" {
			return
		}
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
	// waitUpdates waits until every URI of want has been updated (counting
	// repeats).
	waitUpdates := func(want ...string) {
		deadline := time.After(*timeout)
		for len(want) > 0 {
			select {
			case uri := <-updated:
				for i, w := range want {
					if w == uri {
						want = append(want[:i], want[i+1:]...)
						break
					}
				}
			case <-deadline:
				log.Fatalf("no notifications/resources/updated of %q within %v", want, *timeout)
			}
		}
	}
	subscribe := func(uri string) {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			log.Fatalf("resources/subscribe %s: %v", uri, err)
		}
	}

	subscribe(*resource)
	if *keep != "" {
		subscribe(*keep)
	}
	call(*update)
	if *keep != "" {
		waitUpdates(*resource, *keep)
	} else {
		waitUpdates(*resource)
	}
	if *toolChange != "" {
		call(*toolChange)
		wait("notifications/tools/list_changed", tools)
	}

	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: *resource}); err != nil {
		log.Fatalf("resources/unsubscribe: %v", err)
	}
	mu.Lock()
	unsubbed = true
	for len(updated) > 0 { // what came before the unsubscribe
		<-updated
	}
	mu.Unlock()
	if *keep != "" {
		waitUpdates(*keep, *keep)
	} else {
		call(*update)
	}
	if *promptChange != "" {
		call(*promptChange)
		wait("notifications/prompts/list_changed", prompts)
	}

	mu.Lock()
	out, err := json.Marshal(rep)
	mu.Unlock()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
}
