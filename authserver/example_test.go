package authserver_test

import (
	"fmt"

	"github.com/weftmcp/weft/authserver"
)

// A client metadata document is accepted only when it names the URL it was
// fetched from.
func ExampleParseClientMetadata() {
	const url = "https://app.example.com/oauth/client.json"
	doc := []byte(`{"client_id":"https://app.example.com/oauth/client.json","client_name":"Example App",
		"redirect_uris":["http://127.0.0.1:3000/callback"]}`)
	c, err := authserver.ParseClientMetadata(url, doc)
	fmt.Println(c.Name, c.RedirectURIs, err)

	_, err = authserver.ParseClientMetadata("https://evil.example.com/client.json", doc)
	fmt.Println(err)
	// Output:
	// Example App [http://127.0.0.1:3000/callback] <nil>
	// authserver: invalid client metadata document: its client_id is not the document's URL
}
