package elicit

// Method is the method of an elicitation input request.
const Method = "elicitation/create"

// Mode is an elicitation mode.
type Mode string

// The elicitation modes.
const (
	ModeForm Mode = "form" // in-band structured data through the client
	ModeURL  Mode = "url"  // out-of-band interaction at a URL
)
