// Package skills serves Agent Skills over MCP: the Skills extension
// (io.modelcontextprotocol/skills, SEP-2640).
//
// A skill is a directory holding a SKILL.md (YAML front matter with at least
// name and description, then markdown) and any supporting files. Load one
// with [FromFS] or [FromFiles], or every skill of a tree with [LoadAll]; the
// result is a validated, immutable [Bundle] with a SHA-256 digest and size
// for each file. [Register] then makes a server:
//
//   - declare the extension in server/discover, with directoryRead: true;
//   - serve each file as a resource, skill://<skill-path>/<file-path>, with
//     its media type and size (SKILL.md as text/markdown, named and
//     described from its front matter);
//   - answer skills/list (every registered skill's entry, paginated, an
//     entry never split across pages) and skills/get (one entry by the URI
//     of its SKILL.md, -32602 for a skill it does not serve), both with
//     ttlMs and cacheScope;
//   - answer resources/directory/read for every directory of the skill
//     namespace: each skill root, its subdirectories and the prefix levels
//     above it, children listed with inode/directory for subdirectories.
//
// An entry is {"uri", "frontmatter", "resources"}: frontmatter is SKILL.md's
// front matter rendered verbatim as a JSON object (hosts re-parse the file
// and compare field by field), resources the complete list of the skill's
// files with "sha256:<hex>" digests and sizes.
//
// Validation follows the SEP and the Agent Skills specification: the name
// (1-64 characters of a-z, 0-9, single hyphens) is the skill path's last
// segment; description 1-1024 characters; compatibility at most 500;
// license and allowed-tools strings; metadata a mapping of strings without
// keys under the reserved io.modelcontextprotocol/ prefix. [Limits] bound a
// skill (512 files and 16 MiB, the SEP's limits, plus path length and depth
// and front-matter size and depth).
//
// The front matter is parsed by a small strict YAML parser (see
// [ParseFrontmatter]) rather than a general YAML library: the subset it
// accepts yields exactly what YAML 1.2 parsers produce, and anything outside
// it is rejected at load time, so a served entry always matches what hosts
// parse from the file.
//
// [Config.AddSource] adds a [Source] of skills served elsewhere (a gateway
// relaying another server's skills, package gateway) beside the bundles:
// listed after them, asked for the URIs the server does not serve itself.
//
// Skills whose content is generated ("resources": "dynamic") are not
// supported: every Bundle is static.
package skills

// Identifiers of the extension.
const (
	// ExtensionID identifies the extension in capabilities.
	ExtensionID = "io.modelcontextprotocol/skills"
	// Scheme is the URI scheme skills are served under.
	Scheme = "skill"
	// SkillFile is the name of a skill's manifest.
	SkillFile = "SKILL.md"
	// SkillMimeType is the media type of SKILL.md.
	SkillMimeType = "text/markdown"
	// DirectoryMimeType marks a directory resource.
	DirectoryMimeType = "inode/directory"
	// MethodList, MethodGet and MethodDirectoryRead are the methods served.
	MethodList          = "skills/list"
	MethodGet           = "skills/get"
	MethodDirectoryRead = "resources/directory/read"
	// MetaPrefix is the _meta key prefix reserved for this extension on
	// skill resources.
	MetaPrefix = "io.modelcontextprotocol.skills/"
	// ReservedMetadataPrefix prefixes front matter metadata keys reserved
	// for MCP extensions; skills may not use it.
	ReservedMetadataPrefix = "io.modelcontextprotocol/"
)
