// Command petstore serves the small pet API that ../petstore.yaml
// describes, to try `weft serve --openapi` against:
//
//	go run ./examples/openapi/petstore --addr 127.0.0.1:8090
//	go run ./cmd/weft serve --openapi examples/openapi/petstore.yaml --upstream http://127.0.0.1:8090
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/weftmcp/weft/internal/petstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	token := flag.String("token", "", "bearer token required on every request (none when empty)")
	flag.Parse()
	log.Printf("petstore on http://%s", *addr)
	srv := &http.Server{Addr: *addr, Handler: petstore.New(*token), ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
