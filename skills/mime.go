package skills

import (
	"path"
	"strings"
	"unicode/utf8"
)

// mimeTypes maps file extensions to media types. The table is fixed (not
// the system's) so a skill is served the same everywhere.
var mimeTypes = map[string]string{
	".md":       "text/markdown",
	".markdown": "text/markdown",
	".txt":      "text/plain",
	".text":     "text/plain",
	".html":     "text/html",
	".htm":      "text/html",
	".css":      "text/css",
	".csv":      "text/csv",
	".tsv":      "text/tab-separated-values",
	".js":       "text/javascript",
	".mjs":      "text/javascript",
	".ts":       "text/x-typescript",
	".py":       "text/x-python",
	".sh":       "text/x-shellscript",
	".bash":     "text/x-shellscript",
	".go":       "text/x-go",
	".rb":       "text/x-ruby",
	".rs":       "text/x-rust",
	".java":     "text/x-java",
	".json":     "application/json",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
	".toml":     "application/toml",
	".xml":      "application/xml",
	".sql":      "application/sql",
	".svg":      "image/svg+xml",
	".png":      "image/png",
	".jpg":      "image/jpeg",
	".jpeg":     "image/jpeg",
	".gif":      "image/gif",
	".webp":     "image/webp",
	".ico":      "image/x-icon",
	".pdf":      "application/pdf",
	".zip":      "application/zip",
	".gz":       "application/gzip",
	".tar":      "application/x-tar",
	".wasm":     "application/wasm",
	".woff":     "font/woff",
	".woff2":    "font/woff2",
	".ttf":      "font/ttf",
	".otf":      "font/otf",
	".mp3":      "audio/mpeg",
	".wav":      "audio/wav",
	".mp4":      "video/mp4",
}

// mimeType returns the media type of a skill file: by extension, else
// text/plain for UTF-8 text and application/octet-stream for the rest.
func mimeType(p string, data []byte) string {
	if m, ok := mimeTypes[strings.ToLower(path.Ext(p))]; ok {
		return m
	}
	if isText(data) {
		return "text/plain"
	}
	return "application/octet-stream"
}

// isText reports whether data is UTF-8 without NUL bytes.
func isText(data []byte) bool {
	return utf8.Valid(data) && strings.IndexByte(string(data), 0) < 0
}

// servedAsText reports whether a file is sent as text contents (otherwise
// as a base64 blob). The digest covers the raw bytes either way, and the
// text is exactly those bytes.
func servedAsText(mime string, data []byte) bool {
	if !isText(data) {
		return false
	}
	switch {
	case strings.HasPrefix(mime, "text/"):
		return true
	case mime == "application/json", mime == "application/yaml", mime == "application/toml",
		mime == "application/xml", mime == "application/sql", mime == "image/svg+xml":
		return true
	}
	return false
}
