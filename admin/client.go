package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client calls a server's admin API.
type Client struct {
	// URL is the admin listener's base URL, e.g. http://127.0.0.1:8081.
	URL string
	// Token is the admin bearer token.
	Token string
	// HTTP is the HTTP client (http.DefaultClient when nil).
	HTTP *http.Client
}

// Status returns the keyring status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	return c.do(ctx, http.MethodGet, "/admin/keys", "")
}

// Stage stages key id from the server's keyring file.
func (c *Client) Stage(ctx context.Context, id string) (Status, error) { return c.op(ctx, "stage", id) }

// Activate activates staged key id.
func (c *Client) Activate(ctx context.Context, id string) (Status, error) {
	return c.op(ctx, "activate", id)
}

// Rotate stages and activates key id.
func (c *Client) Rotate(ctx context.Context, id string) (Status, error) {
	return c.op(ctx, "rotate", id)
}

// Remove removes verification key id.
func (c *Client) Remove(ctx context.Context, id string) (Status, error) {
	return c.op(ctx, "remove", id)
}

func (c *Client) op(ctx context.Context, op, id string) (Status, error) {
	body, err := json.Marshal(keyRequest{ID: id})
	if err != nil {
		return Status{}, err
	}
	return c.do(ctx, http.MethodPost, "/admin/keys/"+op, string(body))
}

func (c *Client) do(ctx context.Context, method, path, body string) (Status, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.URL, "/")+path, rd)
	if err != nil {
		return Status{}, fmt.Errorf("admin: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Status{}, fmt.Errorf("admin: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Status{}, fmt.Errorf("admin: reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Error == "" {
			e.Error = string(bytes.TrimSpace(data))
		}
		return Status{}, fmt.Errorf("admin: %s (HTTP %d)", e.Error, resp.StatusCode)
	}
	var st Status
	if err := json.Unmarshal(data, &st); err != nil {
		return Status{}, fmt.Errorf("admin: decoding the response: %w", err)
	}
	return st, nil
}
