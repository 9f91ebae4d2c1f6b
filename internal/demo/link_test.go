package demo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/exactjson"
)

// linkServer serves the demo's link page the way `weft serve` does.
func linkServer(t *testing.T, d *Demo) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/link/", d.stores.linkPage)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// postLink posts the link form of handle h with the given token, Host and
// Origin ("" for none).
func postLink(t *testing.T, ts *httptest.Server, h, token, host, origin string) int {
	t.Helper()
	form := url.Values{}
	if token != "" {
		form.Set("token", token)
	}
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/link/"+h, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestDemoLinkPage: the account-link page keeps nothing for handles it did
// not issue, completes an issued one only with its form token from the
// demo's own host and origin, and holds its pages bounded and only until
// they expire or are consumed.
func TestDemoLinkPage(t *testing.T) {
	d := newTestDemo(t)
	ts := linkServer(t, d)
	ctx := context.Background()

	// A string nobody issued: 404, nothing kept.
	var b [32]byte
	_, _ = rand.Read(b[:])
	forged := base64.RawURLEncoding.EncodeToString(b[:])
	if st := postLink(t, ts, forged, "", "", ""); st != http.StatusNotFound {
		t.Fatalf("POST of a handle nobody issued: HTTP %d, want 404", st)
	}
	if n := d.stores.links.size(); n != 0 {
		t.Fatalf("the page keeps %d entries after a forged POST", n)
	}

	c := testClient(t, d, "alice", weft.URL(weft.RequiredCapability))
	first, err := callTool(ctx, c, "account.link", nil)
	if err != nil {
		t.Fatal(err)
	}
	link := first.str("inputRequests", "link", "params", "url")
	h := strings.TrimPrefix(link, "http://127.0.0.1:8080/link/")
	res, err := http.Get(ts.URL + "/link/" + h)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="token" value="([A-Za-z0-9_-]+)"`).FindSubmatch(page)
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("GET of the issued page: HTTP %d %s", res.StatusCode, page)
	}
	token := string(m[1])
	for _, c := range []struct {
		name, token, host, origin string
	}{
		{"no token", "", "", ""},
		{"wrong token", strings.Repeat("A", len(token)), "", ""},
		{"foreign origin", token, "", "https://attacker.example"},
		{"rebound host", token, "attacker.example:8080", ""},
	} {
		if st := postLink(t, ts, h, c.token, c.host, c.origin); st != http.StatusForbidden {
			t.Errorf("POST with %s: HTTP %d, want 403", c.name, st)
		}
	}
	accept := map[string]exactjson.Value{"link": exactjson.Object(exactjson.Field("action", exactjson.String("accept")))}
	again, err := first.retry(ctx, accept)
	if err != nil || again.resultType() != "input_required" {
		t.Fatalf("refused POSTs completed the link: %v %s", err, again.result)
	}
	if st := postLink(t, ts, h, token, "", "http://127.0.0.1:8080"); st != http.StatusOK {
		t.Fatalf("POST with the token from the demo's origin: HTTP %d", st)
	}
	final, err := again.retry(ctx, accept)
	if err != nil || final.text() != "Account linked." {
		t.Fatalf("after the browser step: %v %q", err, final.text())
	}
	if n := d.stores.links.size(); n != 0 {
		t.Fatalf("a consumed link is still kept (%d entries)", n)
	}

	// Bounded: past the bound account.link refuses; expired pages go.
	l := d.stores.links
	now := time.Now()
	l.now = func() time.Time { return now }
	l.max = 2
	for range 2 {
		if _, err := callTool(ctx, c, "account.link", nil); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := callTool(ctx, c, "account.link", nil); err != nil || !res.isError() || !strings.Contains(res.text(), "Too many") {
		t.Fatalf("a link past the bound: %v %s", err, res.result)
	}
	now = now.Add(linkLifetime)
	if res, err := callTool(ctx, c, "account.link", nil); err != nil || res.resultType() != "input_required" {
		t.Fatalf("a link once the others expired: %v %s", err, res.result)
	}
	if n := l.size(); n != 1 {
		t.Fatalf("%d entries after the expiry, want 1", n)
	}
}
