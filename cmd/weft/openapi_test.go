package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/weftmcp/weft/internal/petstore"
)

// TestOpenAPIServeAndConfirmDelete serves the example document with
// `weft serve --openapi` against the demo upstream, and confirms a DELETE
// in the terminal with `weft call`: declining sends nothing, accepting
// removes the pet.
func TestOpenAPIServeAndConfirmDelete(t *testing.T) {
	store := petstore.New("")
	up := httptest.NewServer(store)
	t.Cleanup(up.Close)
	addr := freeAddr(t)
	startServe(t, "--openapi", "../../examples/openapi/petstore.yaml", "--upstream", up.URL, "--addr", addr, "--data", t.TempDir())
	waitPort(t, addr)
	url := "http://" + addr + "/mcp"
	if out := runWeft(t, "tools", url); !strings.Contains(out, "deletePet") || !strings.Contains(out, "listPets") {
		t.Fatalf("weft tools: %s", out)
	}
	if out := runWeft(t, "call", url, "getPet", "--args", `{"petId":3}`); !strings.Contains(out, `"price":9007199254740993`) {
		t.Fatalf("weft call getPet: %s", out)
	}
	for _, tc := range []struct {
		name    string
		answers [][2]string
		want    string
		fails   bool
		pets    int
	}{
		{"decline", [][2]string{{"[a]ccept, [d]ecline or [c]ancel?", "d"}}, "DELETE /pets/{petId} was not sent", true, 3},
		{"answer no", [][2]string{{"[a]ccept", "a"}, {"Send the request (yes/no, required)", "no"}}, "The user answered no", true, 3},
		{"confirm", [][2]string{{"[a]ccept", "a"}, {"Send the request (yes/no, required)", "yes"}}, "HTTP 204 No Content", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(weftBin, "call", url, "deletePet", "--args", `{"petId":1}`)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			cmd.Stderr = cmd.Stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(stdout)
			var transcript strings.Builder
			for _, a := range tc.answers {
				transcript.WriteString(expectPrompt(t, r, a[0]))
				fmt.Fprintln(stdin, a[1])
			}
			rest, _ := io.ReadAll(r)
			transcript.Write(rest)
			if err := cmd.Wait(); (err != nil) != tc.fails {
				t.Fatalf("weft call: exit error %v (want failure: %v)\n%s", err, tc.fails, transcript.String())
			}
			if !strings.Contains(transcript.String(), tc.want) || !strings.Contains(transcript.String(), `Confirm DELETE /pets/{petId} (Remove a pet) with {"petId":1}?`) {
				t.Fatalf("output %q does not contain %q", transcript.String(), tc.want)
			}
			if n := len(store.Pets()); n != tc.pets {
				t.Fatalf("%d pets left, want %d", n, tc.pets)
			}
		})
	}
}

// TestOpenAPIToolSearch: with --tool-search --listed-tags ops, tools/list
// holds search_tools and the ops-tagged tool only; search_tools finds an
// unlisted tool, which is then called by name.
func TestOpenAPIToolSearch(t *testing.T) {
	store := petstore.New("")
	up := httptest.NewServer(store)
	t.Cleanup(up.Close)
	addr := freeAddr(t)
	startServe(t, "--openapi", "../../examples/openapi/petstore.yaml", "--upstream", up.URL, "--addr", addr, "--data", t.TempDir(),
		"--tool-search", "--listed-tags", "ops")
	waitPort(t, addr)
	url := "http://" + addr + "/mcp"
	out := runWeft(t, "tools", url)
	if !strings.Contains(out, "search_tools") || !strings.Contains(out, "health") || strings.Contains(out, "getPet") || strings.Contains(out, "listPets") {
		t.Fatalf("weft tools with --tool-search: %s", out)
	}
	if out := runWeft(t, "call", url, "search_tools", "--args", `{"query":"get pet","limit":1}`); !strings.Contains(out, `"name":"getPet"`) || strings.Contains(out, `"name":"listPets"`) {
		t.Fatalf("weft call search_tools: %s", out)
	}
	if out := runWeft(t, "call", url, "getPet", "--args", `{"petId":3}`); !strings.Contains(out, `"price":9007199254740993`) {
		t.Fatalf("weft call getPet (found, not listed): %s", out)
	}
}

// Mistakes on the command line get a clear error before anything listens.
func TestOpenAPICommandErrors(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"openapi"}, "usage: weft openapi --spec FILE"},
		{[]string{"openapi", "--spec", "no-such-file.yaml"}, "read the OpenAPI document"},
		{[]string{"serve", "--openapi", "../../examples/openapi/petstore.yaml", "--upstream", "ftp://x"}, "absolute http or https URL"},
		{[]string{"openapi", "--spec", "../../README.md"}, "openapi:"},
		{[]string{"openapi", "--spec", "../../examples/openapi/petstore.yaml", "--listed-tags", "ops", "--stdio"}, "--listed-tags needs --tool-search"},
	} {
		err := run(ctx, tc.args, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
