package servers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weftmcp/weft"
	"github.com/weftmcp/weft/sessionstore"
	sessionpg "github.com/weftmcp/weft/sessionstore/pgstore"
)

// ScaleImpls are the servers of the scale rows (idle listen streams, open
// 2025-11-25 sessions). benchserver serves them like the others, plus the
// control endpoints [MemPath] and [TogglePath].
var ScaleImpls = []string{"weft-listen", "weft-sessions", "weft-sessions-pg", "gosdk-sessions", "mcpgo-sessions"}

const (
	// MemPath answers GET with the server process's [Mem] after two
	// garbage collections and returning free memory to the OS.
	MemPath = "/bench/mem"
	// TogglePath adds the tool "t1" when it is absent and removes it
	// otherwise: one tools list_changed to every listen stream
	// ("weft-listen") or every session's GET stream (the session servers
	// but "weft-sessions-pg").
	TogglePath = "/bench/toggle"
	// PartitionHeader is the header "weft-listen" takes a request's
	// authorization partition from (streams are bounded per partition).
	PartitionHeader = "X-Partition"
	// ScaleSessions bounds the sessions of the session servers.
	ScaleSessions = 20000
)

// Mem is what [MemPath] reports: the live heap and goroutine stacks of the
// server process, its goroutines, and its resident set.
type Mem struct {
	HeapInuse  uint64 `json:"heapInuse"`
	StackInuse uint64 `json:"stackInuse"`
	Goroutines int    `json:"goroutines"`
	RSS        uint64 `json:"rss"` // VmRSS of /proc/self/status, bytes; 0 where unknown
}

// ScaleOptions configure [NewScale].
type ScaleOptions struct {
	// PostgresDSN and PostgresSchema are the session store of
	// "weft-sessions-pg" (the schema is created if missing).
	PostgresDSN, PostgresSchema string
}

// NewScale returns the handler of one of [ScaleImpls] and a function that
// releases what it holds (the PostgreSQL pool).
func NewScale(ctx context.Context, impl string, opt ScaleOptions) (http.Handler, func(), error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+MemPath, serveMem)
	release := func() {}
	// toggle registers the catalog change of TogglePath: add(true) adds t1,
	// add(false) removes it.
	toggle := func(add func(bool) error) {
		var mu sync.Mutex
		present := false
		mux.HandleFunc("POST "+TogglePath, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if err := add(!present); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			present = !present
			w.WriteHeader(http.StatusNoContent)
		})
	}
	weftToggle := func(s *weft.Server) {
		toggle(func(add bool) error {
			if add {
				return addText(s, "t1")
			}
			s.RemoveTool("t1")
			return nil
		})
	}
	legacy := func(store sessionstore.Store) (*weft.Server, error) {
		s, err := weft.NewServer(weft.Implementation{Name: "bench-sessions", Version: "1"}, &weft.Options{
			Logger: discard,
			Legacy: weft.LegacyOptions{Store: store}, // the store has its own limits
		})
		if err != nil {
			return nil, err
		}
		return s, addText(s, "t")
	}
	switch impl {
	case "weft-listen":
		s, err := weft.NewServer(weft.Implementation{Name: "bench-listen", Version: "1"}, &weft.Options{
			Logger: discard,
			Admission: func(ctx context.Context, r *weft.AdmissionRequest) (weft.Identity, error) {
				return weft.Identity{Partition: r.Header.Get(PartitionHeader)}, nil
			},
		})
		if err != nil {
			return nil, nil, err
		}
		if err := addText(s, "t0"); err != nil {
			return nil, nil, err
		}
		weftToggle(s)
		mux.Handle(Path, s)
	case "weft-sessions":
		s, err := legacy(sessionstore.NewMemory(&sessionstore.MemoryOptions{Limits: sessionstore.Limits{MaxSessions: ScaleSessions}}))
		if err != nil {
			return nil, nil, err
		}
		weftToggle(s)
		mux.Handle(Path, s)
	case "weft-sessions-pg":
		if opt.PostgresDSN == "" || opt.PostgresSchema == "" {
			return nil, nil, fmt.Errorf("%s needs a PostgreSQL DSN and schema", impl)
		}
		pg, err := sessionpg.Open(ctx, opt.PostgresDSN, &sessionpg.Options{Schema: opt.PostgresSchema,
			Limits: sessionstore.Limits{MaxSessions: ScaleSessions}, Logger: discard})

		if err != nil {
			return nil, nil, fmt.Errorf("sessions on PostgreSQL: %w", err)
		}
		release = func() { _ = pg.Close() }
		s, err := legacy(pg)
		if err != nil {
			_ = pg.Close()
			return nil, nil, err
		}
		mux.Handle(Path, s)
	case "gosdk-sessions":
		// Stateful (the default): a session per initialize, kept in memory.
		s := gosdk.NewServer(&gosdk.Implementation{Name: "bench-gosdk", Version: "1.0.0"}, &gosdk.ServerOptions{Logger: discard})
		tool := func(name string) {
			gosdk.AddTool(s, &gosdk.Tool{Name: name, Description: "A tool."},
				func(ctx context.Context, req *gosdk.CallToolRequest, in struct{}) (*gosdk.CallToolResult, struct{}, error) {
					return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "x"}}}, struct{}{}, nil
				})
		}
		tool("t")
		toggle(func(add bool) error {
			if add {
				tool("t1")
			} else {
				s.RemoveTools("t1")
			}
			return nil
		})
		mux.Handle(Path, gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s },
			&gosdk.StreamableHTTPOptions{Logger: discard}))
	case "mcpgo-sessions":
		// WithStateful: session ids issued and tracked in memory (its
		// default issues ids it does not keep).
		s := mcpgoserver.NewMCPServer("bench-mcpgo", "1.0.0", mcpgoserver.WithToolCapabilities(true))
		tool := func(name string) {
			s.AddTool(mcpgomcp.NewTool(name, mcpgomcp.WithDescription("A tool.")),
				func(ctx context.Context, req mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
					return mcpgomcp.NewToolResultText("x"), nil
				})
		}
		tool("t")
		toggle(func(add bool) error {
			if add {
				tool("t1")
			} else {
				s.DeleteTools("t1")
			}
			return nil
		})
		mux.Handle(Path, mcpgoserver.NewStreamableHTTPServer(s, mcpgoserver.WithStateful(true),
			mcpgoserver.WithStreamableHTTPLogger(discard)))
	default:
		return nil, nil, fmt.Errorf("unknown scale implementation %q (want one of %v)", impl, ScaleImpls)
	}
	return mux, release, nil
}

func addText(s *weft.Server, name string) error {
	return s.AddTool(weft.Tool{Name: name, Description: "A tool."}, func(ctx context.Context, req *weft.Request) (*weft.CallToolResult, error) {
		return &weft.CallToolResult{Content: []weft.Content{weft.TextContent("x")}}, nil
	})
}

func serveMem(w http.ResponseWriter, r *http.Request) {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := Mem{HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse, Goroutines: runtime.NumGoroutine(), RSS: selfRSS()}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// selfRSS is VmRSS of /proc/self/status in bytes, or 0.
func selfRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}
