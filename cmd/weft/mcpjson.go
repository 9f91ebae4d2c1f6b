package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// mcpServer is one server of an mcp.json, in the shape Claude Desktop,
// Cursor and VS Code share: a stdio command or an HTTP URL.
type mcpServer struct {
	Type    string            `json:"type"` // "stdio", "http", "streamable-http" or "sse"; implied when empty
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// mcpConfig is an mcp.json: servers by name under "mcpServers" (or
// "servers", as VS Code writes it).
type mcpConfig struct {
	MCPServers map[string]mcpServer `json:"mcpServers"`
	Servers    map[string]mcpServer `json:"servers"`
}

// maxConfigBytes bounds an mcp.json.
const maxConfigBytes = 1 << 20

// configFiles are the files read when TARGET is a name and --config is not
// given, in order.
var configFiles = []string{".mcp.json", "mcp.json"}

// lookupServer finds server name in the --config file, or in the first of
// configFiles that exists. It returns the file read ("" when none).
func lookupServer(config, name string) (mcpServer, string, error) {
	files := configFiles
	if config != "" {
		files = []string{config}
	}
	for _, f := range files {
		b, err := readConfigFile(f)
		if errors.Is(err, fs.ErrNotExist) && config == "" {
			continue
		}
		if err != nil {
			return mcpServer{}, f, err
		}
		var c mcpConfig
		if err := json.Unmarshal(b, &c); err != nil {
			return mcpServer{}, f, fmt.Errorf("reading %s: %w", f, err)
		}
		all := c.MCPServers
		if all == nil {
			all = c.Servers
		}
		s, ok := all[name]
		if !ok {
			var names []string
			for n := range all {
				names = append(names, n)
			}
			slices.Sort(names)
			return mcpServer{}, f, fmt.Errorf("%s names no server %q (it has: %s)", f, name, strings.Join(names, ", "))
		}
		switch {
		case s.Command != "" && s.URL != "":
			return mcpServer{}, f, fmt.Errorf("server %q in %s has both a command and a url", name, f)
		case s.Command == "" && s.URL == "":
			return mcpServer{}, f, fmt.Errorf("server %q in %s has neither a command nor a url", name, f)
		case s.Type == "sse":
			return mcpServer{}, f, fmt.Errorf("server %q in %s uses the HTTP+SSE transport of 2024-11-05, which weft does not speak", name, f)
		}
		return s, f, nil
	}
	return mcpServer{}, "", nil
}

// readConfigFile reads an mcp.json of at most maxConfigBytes.
func readConfigFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxConfigBytes)
	}
	return b, nil
}
