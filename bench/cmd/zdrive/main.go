package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weftmcp/weft/bench/servers"
)

func main() {
	addr := flag.String("addr", "", "")
	n := flag.Int("n", 20000, "")
	c := flag.Int("c", 16, "")
	flag.Parse()
	tr := &http.Transport{MaxIdleConnsPerHost: *c, MaxConnsPerHost: *c, DisableCompression: true}
	hc := &http.Client{Transport: tr}
	call := servers.EchoCall()
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for range *c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for {
				id := next.Add(1)
				if id > int64(*n) {
					return
				}
				req, _ := http.NewRequest("POST", "http://"+*addr+servers.Path, bytes.NewReader(call.Body(id)))
				req.Header = call.Header
				resp, err := hc.Do(req)
				if err != nil {
					panic(err)
				}
				buf.Reset()
				io.Copy(&buf, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					panic(buf.String())
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%d req in %v: %.0f/s\n", *n, time.Since(t0), float64(*n)/time.Since(t0).Seconds())
}
