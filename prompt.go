package weft

import (
	"context"
	"fmt"
	"strings"

	"github.com/weftmcp/weft/exactjson"
)

// Prompt describes a prompt template.
type Prompt struct {
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
	Meta        exactjson.Value
	// Inputs declares the client requests the handler may emit.
	Inputs []Input
	// StateMode selects the protection of retry state.
	StateMode StateMode
	// Complete offers completions for the prompt's arguments.
	Complete CompletionHandler
	// Scopes are the OAuth scopes a caller needs, as [Tool].Scopes.
	Scopes []string
}

// PromptArgument describes one string argument of a prompt.
type PromptArgument struct {
	Name        string
	Title       string
	Description string
	Required    bool
}

// PromptHandler handles prompts/get. Missing required arguments are rejected
// before it runs. It may return an [*InputRequired] like a tool handler.
type PromptHandler func(ctx context.Context, req *Request, args map[string]string) (*GetPromptResult, error)

type promptEntry struct {
	prompt  Prompt
	op      *operation
	handler PromptHandler
}

// AddPrompt registers (or replaces) a prompt.
func (s *Server) AddPrompt(p Prompt, h PromptHandler) error {
	if h == nil {
		return fmt.Errorf("weft: prompt %q: nil handler", p.Name)
	}
	if strings.TrimSpace(p.Name) == "" {
		return fmt.Errorf("weft: prompt needs a name")
	}
	seen := map[string]bool{}
	for _, a := range p.Arguments {
		if a.Name == "" || seen[a.Name] {
			return fmt.Errorf("weft: prompt %q: argument names must be unique and non-empty", p.Name)
		}
		seen[a.Name] = true
	}
	op, err := s.newOperation(KindPrompt, p.Name, p.Inputs, p.StateMode)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.prompts.put(p.Name, &promptEntry{prompt: p, op: op, handler: h})
	s.mu.Unlock()
	warnOversize(s, KindPrompt, p.Name, op, p)
	s.bus.publish(event{kind: evPromptsListChanged})
	return nil
}

// RemovePrompt removes a prompt; it reports whether it existed.
func (s *Server) RemovePrompt(name string) bool {
	s.mu.Lock()
	ok := s.prompts.remove(name)
	s.mu.Unlock()
	if ok {
		s.bus.publish(event{kind: evPromptsListChanged})
	}
	return ok
}

func (p *Prompt) encode(e *enc) {
	e.open()
	e.str("name", p.Name)
	e.strOpt("title", p.Title)
	e.strOpt("description", p.Description)
	if len(p.Arguments) > 0 {
		e.name("arguments")
		e.b = append(e.b, '[')
		for i, a := range p.Arguments {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.open()
			e.str("name", a.Name)
			e.strOpt("title", a.Title)
			e.strOpt("description", a.Description)
			if a.Required {
				e.boolean("required", true)
			}
			e.close()
		}
		e.b = append(e.b, ']')
	}
	e.valueOpt("_meta", p.Meta)
	e.close()
}

// CompletionRequest is what a [CompletionHandler] completes.
type CompletionRequest struct {
	// Argument is the prompt argument or template variable being completed.
	Argument string
	// Value is what the user typed so far.
	Value string
	// Context holds already-resolved arguments.
	Context map[string]string
}

// Completion is the answer of a [CompletionHandler]; at most 100 values are sent.
type Completion struct {
	Values  []string
	Total   int
	HasMore bool
}

// CompletionHandler offers completion values for a prompt argument or a
// resource-template variable.
type CompletionHandler func(ctx context.Context, req *Request, c CompletionRequest) (Completion, error)
