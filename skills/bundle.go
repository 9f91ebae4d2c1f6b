package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/weftmcp/weft/exactjson"
)

// Per-skill limits. The SEP fixes the first two for every host: servers
// SHOULD NOT serve a skill beyond them, so they are also the ceilings.
const (
	// DefaultMaxFiles is the SEP's limit on a skill's resources entries,
	// SKILL.md included (512).
	DefaultMaxFiles = 512
	// DefaultMaxTotalBytes is the SEP's limit on the summed size of a
	// skill's files (16 MiB).
	DefaultMaxTotalBytes = 16 << 20
	// DefaultMaxPathBytes bounds a file's path within its skill, and a skill
	// path (prefix and name).
	DefaultMaxPathBytes = 1024
	// MaxPathBytesCeiling is the largest accepted MaxPathBytes.
	MaxPathBytesCeiling = 4096
	// DefaultMaxPathDepth bounds the number of segments of a file's path
	// within its skill ("references/FORMS.md" has 2), and of a skill path.
	DefaultMaxPathDepth = 16
	// MaxPathDepthCeiling is the largest accepted MaxPathDepth.
	MaxPathDepthCeiling = 64
)

// Agent Skills field limits.
const (
	// MaxNameLength is the longest skill name (characters).
	MaxNameLength = 64
	// MaxDescriptionLength is the longest description (characters).
	MaxDescriptionLength = 1024
	// MaxCompatibilityLength is the longest compatibility field (characters).
	MaxCompatibilityLength = 500
)

// Limits bound what one skill may hold. A zero field means its default; a
// field may be lowered, never raised past its ceiling (for MaxFiles and
// MaxTotalBytes the ceiling is the default: the SEP's limits).
type Limits struct {
	// MaxFiles bounds the files of a skill, SKILL.md included.
	// Default and ceiling DefaultMaxFiles.
	MaxFiles int
	// MaxTotalBytes bounds the summed size of a skill's files.
	// Default and ceiling DefaultMaxTotalBytes.
	MaxTotalBytes int64
	// MaxPathBytes bounds a file path within the skill and the skill path.
	// Default DefaultMaxPathBytes, ceiling MaxPathBytesCeiling.
	MaxPathBytes int
	// MaxPathDepth bounds the segments of a file path and of a skill path.
	// Default DefaultMaxPathDepth, ceiling MaxPathDepthCeiling.
	MaxPathDepth int
	// MaxFrontmatterBytes bounds SKILL.md's front matter. Default
	// DefaultMaxFrontmatterBytes, ceiling MaxFrontmatterBytesCeiling.
	MaxFrontmatterBytes int
	// MaxFrontmatterDepth bounds the nesting of the front matter. Default
	// DefaultMaxFrontmatterDepth, ceiling MaxFrontmatterDepthCeiling.
	MaxFrontmatterDepth int
}

func (l Limits) withDefaults() (Limits, error) {
	type field struct {
		name     string
		v        *int
		def, top int
	}
	total := int(l.MaxTotalBytes)
	if int64(total) != l.MaxTotalBytes {
		total = -1
	}
	fields := []field{
		{"MaxFiles", &l.MaxFiles, DefaultMaxFiles, DefaultMaxFiles},
		{"MaxTotalBytes", &total, DefaultMaxTotalBytes, DefaultMaxTotalBytes},
		{"MaxPathBytes", &l.MaxPathBytes, DefaultMaxPathBytes, MaxPathBytesCeiling},
		{"MaxPathDepth", &l.MaxPathDepth, DefaultMaxPathDepth, MaxPathDepthCeiling},
		{"MaxFrontmatterBytes", &l.MaxFrontmatterBytes, DefaultMaxFrontmatterBytes, MaxFrontmatterBytesCeiling},
		{"MaxFrontmatterDepth", &l.MaxFrontmatterDepth, DefaultMaxFrontmatterDepth, MaxFrontmatterDepthCeiling},
	}
	for _, f := range fields {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case *f.v < 0 || *f.v > f.top:
			return l, fmt.Errorf("skills: Limits.%s must be between 1 and %d", f.name, f.top)
		}
	}
	l.MaxTotalBytes = int64(total)
	return l, nil
}

// LoadOptions configure how a Bundle is loaded. The zero value (or nil)
// is usable.
type LoadOptions struct {
	// Prefix places the skill under an organizational prefix: with prefix
	// "acme/billing" the skill named refunds is served at
	// skill://acme/billing/refunds/SKILL.md. Segments are 1-255 characters
	// of a-z 0-9 - . _ ~ (the first is the URI authority, hence lower
	// case). For [LoadAll] the prefix goes before every discovered skill
	// path.
	Prefix string
	// Limits are the per-skill limits (zero fields keep their defaults).
	Limits Limits
}

// File describes one file of a skill.
type File struct {
	// Path is the file's path within the skill, "/"-separated.
	Path string
	// URI is the file's resource URI.
	URI string
	// MimeType is the media type it is served with.
	MimeType string
	// Size is the length of its content in bytes.
	Size int64
	// Digest is "sha256:" and the lowercase hex SHA-256 of its content.
	Digest string
}

// Bundle is one loaded, validated skill: SKILL.md with its front matter
// and every supporting file, with digests. Bundles are immutable. The zero
// Bundle is not usable.
type Bundle struct{ b *bundle }

type bundle struct {
	skillPath   string // prefix + "/" + name
	name        string
	description string
	frontmatter exactjson.Value
	files       []*file // SKILL.md first, then by path
	entry       exactjson.Value
}

type file struct {
	File
	data []byte
	text string // the content when it is served as text
	blob bool
}

// Name returns the skill's name (front matter name).
func (b Bundle) Name() string { return b.field(func(x *bundle) string { return x.name }) }

// Description returns the front matter description.
func (b Bundle) Description() string { return b.field(func(x *bundle) string { return x.description }) }

// Path returns the skill path: the prefix, if any, and the name.
func (b Bundle) Path() string { return b.field(func(x *bundle) string { return x.skillPath }) }

// URI returns the URI of the skill's SKILL.md, which identifies the skill.
func (b Bundle) URI() string { return b.field(func(x *bundle) string { return SkillURI(x.skillPath) }) }

func (b Bundle) field(f func(*bundle) string) string {
	if b.b == nil {
		return ""
	}
	return f(b.b)
}

// Frontmatter returns SKILL.md's front matter as the JSON object the
// skill's entry carries.
func (b Bundle) Frontmatter() exactjson.Value {
	if b.b == nil {
		return exactjson.Value{}
	}
	return b.b.frontmatter
}

// Entry returns the skill's entry, as skills/list and skills/get send it:
// {"uri", "frontmatter", "resources": [{"uri", "digest", "size"}...]}.
func (b Bundle) Entry() exactjson.Value {
	if b.b == nil {
		return exactjson.Value{}
	}
	return b.b.entry
}

// Files describes the skill's files, SKILL.md first, then by path.
func (b Bundle) Files() []File {
	if b.b == nil {
		return nil
	}
	out := make([]File, len(b.b.files))
	for i, f := range b.b.files {
		out[i] = f.File
	}
	return out
}

// SkillURI returns the URI of the SKILL.md of the skill at skillPath.
func SkillURI(skillPath string) string { return Scheme + "://" + skillPath + "/" + SkillFile }

// FromFiles builds a skill from file contents keyed by their "/"-separated
// path within the skill; "SKILL.md" is required. The contents are copied.
func FromFiles(files map[string][]byte, opts *LoadOptions) (Bundle, error) {
	o, err := options(opts)
	if err != nil {
		return Bundle{}, err
	}
	if len(files) > o.Limits.MaxFiles {
		return Bundle{}, fmt.Errorf("skills: %d files, more than the limit of %d", len(files), o.Limits.MaxFiles)
	}
	var total int64
	list := make([]*file, 0, len(files))
	for p, data := range files {
		if err := checkFilePath(p, o.Limits); err != nil {
			return Bundle{}, err
		}
		if total += int64(len(data)); total > o.Limits.MaxTotalBytes {
			return Bundle{}, fmt.Errorf("skills: the files hold more than the limit of %d bytes", o.Limits.MaxTotalBytes)
		}
		list = append(list, &file{File: File{Path: p}, data: append([]byte{}, data...)})
	}
	return build(list, o)
}

// FromFS builds a skill from the directory tree of fsys, whose root holds
// SKILL.md. Every regular file is part of the skill (including nested
// skills' files, which are supporting files of this one); other file types
// (symbolic links, devices) are an error, as is crossing a limit.
func FromFS(fsys fs.FS, opts *LoadOptions) (Bundle, error) {
	o, err := options(opts)
	if err != nil {
		return Bundle{}, err
	}
	list, err := readTree(fsys, o.Limits)
	if err != nil {
		return Bundle{}, err
	}
	return build(list, o)
}

// LoadAll loads every skill in the tree of fsys: each directory that holds
// a SKILL.md is a skill whose skill path is the directory's path (after the
// LoadOptions.Prefix, if any), whose last segment must equal the skill's
// name. Nested skills are loaded both as skills of their own and as
// supporting files of the enclosing skill, as the SEP publishes them. A
// SKILL.md at the root of fsys is an error (use FromFS). The bundles come
// sorted by skill path.
func LoadAll(fsys fs.FS, opts *LoadOptions) ([]Bundle, error) {
	o, err := options(opts)
	if err != nil {
		return nil, err
	}
	var dirs []string
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != SkillFile {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("skills: %s is not a regular file", p)
		}
		dir := path.Dir(p)
		if dir == "." {
			return fmt.Errorf("skills: LoadAll: SKILL.md at the root has no skill path; use FromFS")
		}
		dirs = append(dirs, dir)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	out := make([]Bundle, 0, len(dirs))
	for _, dir := range dirs {
		sub, err := fs.Sub(fsys, dir)
		if err != nil {
			return nil, err
		}
		prefix := path.Dir(dir)
		if prefix == "." {
			prefix = ""
		}
		if o.Prefix != "" {
			prefix = strings.TrimSuffix(o.Prefix+"/"+prefix, "/")
		}
		b, err := FromFS(sub, &LoadOptions{Prefix: prefix, Limits: o.Limits})
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, dir)
		}
		if base := path.Base(dir); base != b.Name() {
			return nil, fmt.Errorf("skills: %s: the directory name %q differs from the skill name %q", dir, base, b.Name())
		}
		out = append(out, b)
	}
	return out, nil
}

// options returns opts with its defaults, checked.
func options(opts *LoadOptions) (LoadOptions, error) {
	var o LoadOptions
	if opts != nil {
		o = *opts
	}
	var err error
	if o.Limits, err = o.Limits.withDefaults(); err != nil {
		return o, err
	}
	if o.Prefix != "" {
		if err := checkPrefix(o.Prefix, o.Limits); err != nil {
			return o, err
		}
	}
	return o, nil
}

// readTree reads every regular file of fsys within the limits.
func readTree(fsys fs.FS, lim Limits) ([]*file, error) {
	var out []*file
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if err := checkFilePath(p, lim); err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("skills: %s is not a regular file", p)
		}
		if len(out) == lim.MaxFiles {
			return fmt.Errorf("skills: more than the limit of %d files", lim.MaxFiles)
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		// Read one byte past what the limit leaves, whatever Stat claims.
		data, err := io.ReadAll(io.LimitReader(f, lim.MaxTotalBytes-total+1))
		if err != nil {
			return fmt.Errorf("skills: reading %s: %w", p, err)
		}
		if total += int64(len(data)); total > lim.MaxTotalBytes {
			return fmt.Errorf("skills: the files hold more than the limit of %d bytes", lim.MaxTotalBytes)
		}
		out = append(out, &file{File: File{Path: p}, data: data})
		return nil
	})
	return out, err
}

// checkFilePath validates a path within a skill.
func checkFilePath(p string, lim Limits) error {
	switch {
	case len(p) > lim.MaxPathBytes:
		return fmt.Errorf("skills: path %.64q... is longer than the limit of %d bytes", p, lim.MaxPathBytes)
	case !fs.ValidPath(p) || p == ".":
		return fmt.Errorf("skills: %q is not a clean relative path", p)
	case strings.Count(p, "/")+1 > lim.MaxPathDepth:
		return fmt.Errorf("skills: %q is deeper than the limit of %d segments", p, lim.MaxPathDepth)
	case strings.IndexByte(p, '\\') >= 0:
		return fmt.Errorf("skills: %q holds a backslash", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return fmt.Errorf("skills: %q holds a control character or invalid UTF-8", p)
		}
	}
	return nil
}

// checkPrefix validates an organizational prefix.
func checkPrefix(prefix string, lim Limits) error {
	segs := strings.Split(prefix, "/")
	if len(segs)+1 > lim.MaxPathDepth || len(prefix)+1+MaxNameLength > lim.MaxPathBytes {
		return fmt.Errorf("skills: prefix %q is longer than the limits allow", prefix)
	}
	for _, s := range segs {
		if !validSegment(s) {
			return fmt.Errorf("skills: prefix %q: segments are 1-255 characters of a-z 0-9 - . _ ~, not . or ..", prefix)
		}
	}
	return nil
}

func validSegment(s string) bool {
	if s == "" || len(s) > 255 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// ValidName reports whether name follows the Agent Skills naming rules:
// 1-64 characters of a-z, 0-9 and hyphens, not starting or ending with a
// hyphen, without consecutive hyphens.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLength || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// checkAgentSkills validates the Agent Skills fields of the front matter
// and returns name and description.
func checkAgentSkills(fm exactjson.Value) (name, description string, err error) {
	str := func(key string, required bool, maxChars int) (string, error) {
		v, ok := fm.Get(key)
		if !ok {
			if required {
				return "", fmt.Errorf("skills: SKILL.md front matter has no %q", key)
			}
			return "", nil
		}
		s, ok := v.AsString()
		if !ok {
			return "", fmt.Errorf("skills: SKILL.md front matter %q must be a string, not %s", key, v.Kind())
		}
		if n := utf8.RuneCountInString(s); n == 0 || maxChars > 0 && n > maxChars {
			return "", fmt.Errorf("skills: SKILL.md front matter %q must be 1-%d characters", key, maxChars)
		}
		return s, nil
	}
	if name, err = str("name", true, MaxNameLength); err != nil {
		return "", "", err
	}
	if !ValidName(name) {
		return "", "", fmt.Errorf("skills: skill name %q must be 1-%d characters of a-z, 0-9 and single hyphens, not starting or ending with a hyphen", name, MaxNameLength)
	}
	if description, err = str("description", true, MaxDescriptionLength); err != nil {
		return "", "", err
	}
	if strings.TrimSpace(description) == "" {
		return "", "", errors.New("skills: SKILL.md front matter \"description\" is blank")
	}
	if _, err = str("compatibility", false, MaxCompatibilityLength); err != nil {
		return "", "", err
	}
	for _, k := range []string{"license", "allowed-tools"} {
		if _, err = str(k, false, 1<<20); err != nil {
			return "", "", err
		}
	}
	if md, ok := fm.Get("metadata"); ok {
		if md.Kind() != exactjson.KindObject {
			return "", "", fmt.Errorf("skills: SKILL.md front matter \"metadata\" must be a mapping, not %s", md.Kind())
		}
		for k, v := range md.All() {
			if strings.HasPrefix(k, ReservedMetadataPrefix) {
				return "", "", fmt.Errorf("skills: metadata key %q: the %s prefix is reserved for MCP extensions", k, ReservedMetadataPrefix)
			}
			if v.Kind() != exactjson.KindString {
				return "", "", fmt.Errorf("skills: metadata %q must be a string, not %s (quote it)", k, v.Kind())
			}
		}
	}
	return name, description, nil
}

// build validates the files and computes the skill entry.
func build(files []*file, o LoadOptions) (Bundle, error) {
	var skillMD *file
	for _, f := range files {
		if f.Path == SkillFile {
			skillMD = f
		}
	}
	if skillMD == nil {
		return Bundle{}, errors.New("skills: no SKILL.md at the root of the skill")
	}
	yaml, _, err := SplitFrontmatter(skillMD.data)
	if err != nil {
		return Bundle{}, err
	}
	fm, err := parseFrontmatter(yaml, o.Limits.MaxFrontmatterBytes, o.Limits.MaxFrontmatterDepth)
	if err != nil {
		return Bundle{}, err
	}
	name, desc, err := checkAgentSkills(fm)
	if err != nil {
		return Bundle{}, err
	}
	skillPath := name
	if o.Prefix != "" {
		skillPath = o.Prefix + "/" + name
	}
	if strings.Count(skillPath, "/")+1 > o.Limits.MaxPathDepth || len(skillPath) > o.Limits.MaxPathBytes {
		return Bundle{}, fmt.Errorf("skills: skill path %q is longer than the limits allow", skillPath)
	}
	sort.Slice(files, func(i, j int) bool {
		if (files[i] == skillMD) != (files[j] == skillMD) {
			return files[i] == skillMD
		}
		return files[i].Path < files[j].Path
	})
	// A path may not be both a file and a directory (FromFiles can say so).
	for i := 1; i < len(files); i++ {
		if strings.HasPrefix(files[i].Path, files[i-1].Path+"/") {
			return Bundle{}, fmt.Errorf("skills: %q is both a file and a directory", files[i-1].Path)
		}
	}
	res := make([]exactjson.Value, len(files))
	for i, f := range files {
		sum := sha256.Sum256(f.data)
		f.URI = Scheme + "://" + skillPath + "/" + escapePath(f.Path)
		f.Size = int64(len(f.data))
		f.Digest = "sha256:" + hex.EncodeToString(sum[:])
		f.MimeType = mimeType(f.Path, f.data)
		if f == skillMD {
			f.MimeType = SkillMimeType
		}
		if f.blob = !servedAsText(f.MimeType, f.data); !f.blob {
			f.text = string(f.data)
		}
		res[i] = exactjson.Object(
			exactjson.Field("uri", exactjson.String(f.URI)),
			exactjson.Field("digest", exactjson.String(f.Digest)),
			exactjson.Field("size", exactjson.Int(f.Size)))
	}
	b := &bundle{skillPath: skillPath, name: name, description: desc, frontmatter: fm, files: files}
	b.entry = exactjson.Object(
		exactjson.Field("uri", exactjson.String(SkillURI(skillPath))),
		exactjson.Field("frontmatter", fm),
		exactjson.Field("resources", exactjson.Array(res...)))
	if _, err := exactjson.Encode(b.entry, 0); err != nil {
		return Bundle{}, fmt.Errorf("skills: the entry cannot be encoded: %w", err)
	}
	return Bundle{b: b}, nil
}

// escapePath percent-encodes every byte of each segment outside the
// unreserved set of RFC 3986 (A-Z a-z 0-9 - . _ ~).
func escapePath(p string) string {
	var b strings.Builder
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}
