package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/weftmcp/weft/client/oauth"
)

func ExampleParseWWWAuthenticate() {
	cs, err := oauth.ParseWWWAuthenticate(`Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`)
	if err != nil {
		panic(err)
	}
	fmt.Println(cs[0].Scheme, cs[0].Param("error"), cs[0].Param("scope"))
	// Output: Bearer insufficient_scope files:read files:write
}

// A service reaches a protected MCP server with its own credentials
// (client credentials): the first request is answered 401, the transport
// discovers the authorization server, obtains a token and retries.
// Stand-ins for both servers run on loopback.
func ExampleNewTransport() {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	send := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	// The authorization server.
	mux.HandleFunc("GET /.well-known/oauth-authorization-server/as", func(w http.ResponseWriter, r *http.Request) {
		send(w, map[string]any{"issuer": srv.URL + "/as", "token_endpoint": srv.URL + "/as/token"})
	})
	mux.HandleFunc("POST /as/token", func(w http.ResponseWriter, r *http.Request) {
		if id, secret, _ := r.BasicAuth(); id != "reporting" || secret != "s3cret" || r.PostFormValue("resource") != srv.URL+"/mcp" {
			w.WriteHeader(http.StatusUnauthorized)
			send(w, map[string]any{"error": "invalid_client"})
			return
		}
		send(w, map[string]any{"access_token": "token-1", "token_type": "Bearer", "expires_in": 3600})
	})
	// The MCP server and its protected resource metadata.
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		send(w, map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL + "/as"}})
	})
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer token-1" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "authorized")
	})

	hc := &http.Client{Transport: oauth.NewTransport(nil, oauth.Config{
		Grant:    oauth.GrantClientCredentials,
		ClientID: "reporting", ClientSecret: "s3cret",
	})}
	// client.New(client.NewHTTPTransport(srv.URL+"/mcp", &client.HTTPOptions{Client: hc}), ...) uses it
	// the same way; here a plain request shows the exchange.
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/mcp", nil)
	resp, err := hc.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	// Output: 200 OK
}
