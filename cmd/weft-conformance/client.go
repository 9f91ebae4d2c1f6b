package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftmcp/weft/client"
	"github.com/weftmcp/weft/client/oauth"
	"github.com/weftmcp/weft/exactjson"
)

// The client mode: `weft-conformance client URL`, run by the conformance
// suite's `client --command` (which appends the URL of its mock server and
// names the scenario in MCP_CONFORMANCE_SCENARIO, its data in
// MCP_CONFORMANCE_CONTEXT and the protocol version in
// MCP_CONFORMANCE_PROTOCOL_VERSION). Each scenario drives Weft's client
// as an application would.

// conformanceRedirect is the redirect URI the suite's mock authorization
// servers redirect to (nothing listens there: the code is read from the
// Location header).
const conformanceRedirect = "http://localhost:3000/callback"

// conformanceCIMD is the client ID metadata document URL the suite
// expects a CIMD-capable client to use.
const conformanceCIMD = "https://conformance-test.local/client-metadata.json"

type scenarioContext map[string]any

func (c scenarioContext) str(k string) string {
	s, _ := c[k].(string)
	return s
}

func runClientMode(args []string) {
	log.SetFlags(0)
	log.SetPrefix("weft-conformance client: ")
	if len(args) != 1 {
		log.Fatal("usage: weft-conformance client SERVER_URL (MCP_CONFORMANCE_SCENARIO names the scenario)")
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	version := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := runScenario(ctx, scenario, args[0], version, sc); err != nil {
		log.Fatalf("scenario %q: %v", scenario, err)
	}
}

// followAuthorization plays the user's browser against the suite's mock
// authorization servers, which redirect at once: it requests the
// authorization URL without following the redirect and returns the
// redirect's query parameters.
func followAuthorization(ctx context.Context, authURL string) (url.Values, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return nil, fmt.Errorf("the authorization endpoint did not redirect (HTTP %s)", resp.Status)
	}
	return loc.Query(), nil
}

// authConfig builds the OAuth configuration a scenario calls for.
func authConfig(scenario string, sc scenarioContext) (oauth.Config, error) {
	cfg := oauth.Config{
		RedirectURL:       conformanceRedirect,
		Authorize:         followAuthorization,
		ClientMetadataURL: conformanceCIMD,
		ClientName:        "weft-conformance",
		OfflineAccess:     true,
	}
	switch scenario {
	case "auth/client-credentials-basic":
		cfg.Grant = oauth.GrantClientCredentials
		cfg.ClientID, cfg.ClientSecret = sc.str("client_id"), sc.str("client_secret")
	case "auth/client-credentials-jwt":
		cfg.Grant = oauth.GrantClientCredentials
		cfg.ClientID = sc.str("client_id")
		key, err := oauth.ParsePrivateKeyPEM([]byte(sc.str("private_key_pem")))
		if err != nil {
			return cfg, err
		}
		cfg.PrivateKey, cfg.SigningAlg, cfg.AuthMethod = key, sc.str("signing_algorithm"), oauth.AuthPrivateKeyJWT
	case "auth/wif-jwt-bearer":
		cfg.Grant = oauth.GrantJWTBearer
		cfg.ClientID = sc.str("client_id")
		jwt := sc.str("valid_jwt")
		cfg.Assertion = func(context.Context, oauth.AssertionRequest) (string, error) { return jwt, nil }
	case "auth/enterprise-managed-authorization":
		cfg.Grant = oauth.GrantJWTBearer
		cfg.ClientID, cfg.ClientSecret = sc.str("client_id"), sc.str("client_secret")
		idToken := sc.str("idp_id_token")
		cfg.Assertion = oauth.IDJAGAssertion(oauth.Enterprise{
			TokenEndpoint: sc.str("idp_token_endpoint"),
			ClientID:      sc.str("idp_client_id"),
			IDToken:       func(context.Context) (string, error) { return idToken, nil },
		})
	default:
		if id := sc.str("client_id"); id != "" {
			cfg.ClientID, cfg.ClientSecret, cfg.ClientIssuer = id, sc.str("client_secret"), sc.str("issuer")
		}
	}
	key, err := oauth.NewDPoPKey(nil)
	if err != nil {
		return cfg, err
	}
	cfg.DPoP = key // used only where the authorization server offers DPoP
	return cfg, nil
}

func newClient(serverURL, version string, hc *http.Client, opts client.Options) *client.Client {
	opts.ClientInfo = client.Implementation{Name: "weft-conformance-client", Version: "0.1.0"}
	if version != "" {
		opts.ProtocolVersion = version
	}
	return client.New(client.NewHTTPTransport(serverURL, &client.HTTPOptions{Client: hc}), &opts)
}

// acceptElicitation accepts every elicitation with the given content.
func acceptElicitation(content exactjson.Value) func(context.Context, exactjson.Value) (exactjson.Value, error) {
	return func(context.Context, exactjson.Value) (exactjson.Value, error) {
		return exactjson.Object(exactjson.Field("action", exactjson.String("accept")), exactjson.Field("content", content)), nil
	}
}

func runScenario(ctx context.Context, scenario, serverURL, version string, sc scenarioContext) error {
	if strings.HasPrefix(scenario, "auth/") {
		cfg, err := authConfig(scenario, sc)
		if err != nil {
			return err
		}
		hc := &http.Client{Transport: oauth.NewTransport(nil, cfg)}
		c := newClient(serverURL, version, hc, client.Options{})
		defer c.Close()
		if _, err := c.ListTools(ctx); err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if _, err := c.CallTool(ctx, "test-tool", nil); err != nil {
			return fmt.Errorf("tools/call: %w", err)
		}
		return nil
	}
	opts := client.Options{}
	switch scenario {
	case "sep-2322-client-request-state":
		opts.Handlers.Elicit = acceptElicitation(exactjson.Object(exactjson.Field("confirmed", exactjson.Bool(true))))
	case "elicitation-sep1034-client-defaults":
		opts.Handlers.Elicit = acceptElicitation(exactjson.Object())
	}
	c := newClient(serverURL, version, nil, opts)
	defer c.Close()
	switch scenario {
	case "initialize", "json-schema-ref-no-deref":
		_, err := c.ListTools(ctx)
		return err
	case "request-metadata":
		_, err := c.Discover(ctx)
		return err
	case "tools_call":
		if _, err := c.ListTools(ctx); err != nil {
			return err
		}
		_, err := c.CallTool(ctx, "add_numbers", map[string]any{"a": 5, "b": 3})
		return err
	case "elicitation-sep1034-client-defaults", "sse-retry":
		tools, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if _, err := c.CallTool(ctx, t.Name, nil); err != nil {
				return fmt.Errorf("tools/call %s: %w", t.Name, err)
			}
		}
		return nil
	case "sep-2322-client-request-state":
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if _, err := c.CallTool(ctx, name, nil); err != nil {
				return fmt.Errorf("tools/call %s: %w", name, err)
			}
		}
		return nil
	case "http-standard-headers":
		if tools, err := c.ListTools(ctx); err == nil && len(tools) > 0 {
			_, _ = c.CallTool(ctx, tools[0].Name, nil)
		}
		if res, err := c.ListResources(ctx); err == nil && len(res) > 0 {
			if u, ok := res[0].Get("uri"); ok {
				s, _ := u.AsString()
				_, _ = c.ReadResource(ctx, s)
			}
		}
		if ps, err := c.ListPrompts(ctx); err == nil && len(ps) > 0 {
			if n, ok := ps[0].Get("name"); ok {
				s, _ := n.AsString()
				_, _ = c.GetPrompt(ctx, s, map[string]string{})
			}
		}
		return nil
	case "http-custom-headers":
		if _, err := c.ListTools(ctx); err != nil {
			return err
		}
		calls, _ := sc["toolCalls"].([]any)
		for _, raw := range calls {
			call, _ := raw.(map[string]any)
			name, _ := call["name"].(string)
			args, _ := call["arguments"].(map[string]any)
			if _, err := c.CallTool(ctx, name, args); err != nil {
				log.Printf("tools/call %s: %v", name, err)
			}
		}
		return nil
	case "http-invalid-tool-headers":
		tools, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if _, err := c.CallTool(ctx, t.Name, map[string]any{"region": "us-west1"}); err != nil {
				log.Printf("tools/call %s: %v", t.Name, err)
			}
		}
		return nil
	case "json-schema-2020-12-preservation":
		tools, err := c.ListTools(ctx)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if t.Name == "json_schema_2020_12_tool" {
				_, err := c.CallTool(ctx, "json_schema_echo", exactjson.Object(exactjson.Field("schema", t.InputSchema)))
				return err
			}
		}
		return errors.New("json_schema_2020_12_tool is not listed")
	}
	return fmt.Errorf("unknown scenario %q", scenario)
}

// runSummary is `weft-conformance client-summary DIR`: it counts the
// checks of every checks.json under each group directory of DIR (SUCCESS
// passes, FAILURE fails, as the suite counts), prints the failures, a
// line per group and the closing "N passed, M failed", and exits 1 when
// any check failed or no check ran.
func runSummary(args []string) {
	log.SetFlags(0)
	if len(args) != 1 {
		log.Fatal("usage: weft-conformance client-summary DIR")
	}
	groups, err := os.ReadDir(args[0])
	if err != nil {
		log.Fatal(err)
	}
	var total, failed int
	for _, g := range groups {
		if !g.IsDir() {
			continue
		}
		var gp, gf int
		root := filepath.Join(args[0], g.Name())
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "checks.json" {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			var checks []struct {
				ID, Status, ErrorMessage, Description string
			}
			if err := json.Unmarshal(data, &checks); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					gp++
				case "FAILURE":
					gf++
					msg := c.ErrorMessage
					if msg == "" {
						msg = c.Description
					}
					fmt.Printf("failed: %s %s :: %s - %s\n", g.Name(), filepath.Base(filepath.Dir(path)), c.ID, msg)
				}
			}
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d passed, %d failed\n", g.Name(), gp, gf)
		total += gp + gf
		failed += gf
	}
	fmt.Printf("%d passed, %d failed\n", total-failed, failed)
	if failed > 0 || total == 0 {
		os.Exit(1)
	}
}
