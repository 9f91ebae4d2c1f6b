package seal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
)

// KeyringFileVersion is the version of the keyring file format.
const KeyringFileVersion = 1

// maxKeyringFileBytes bounds keyring files; real ones are a few KiB.
const maxKeyringFileBytes = 1 << 20

// ParseKeyringFile parses a keyring file:
//
//	{"version":1,"active":"<id>","keys":[{"id":"<id>","secret":"<base64url>"},...]}
//
// Secrets are unpadded base64url (RFC 4648 section 5) in canonical form.
// keys lists every key, active and verification-only, once; active names
// one of them. Unknown or repeated members, trailing data and files over
// 1 MiB are rejected. Error messages never contain secret bytes.
func ParseKeyringFile(data []byte) (*Keyring, error) {
	if len(data) > maxKeyringFileBytes {
		return nil, fileErr("file exceeds %d bytes", maxKeyringFileBytes)
	}
	p := fileParser{dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	var (
		version, active string
		keys            []Key
		seen            = map[string]bool{}
	)
	if err := p.delim('{', "the file must be a JSON object"); err != nil {
		return nil, err
	}
	for p.dec.More() {
		name, err := p.str("member name")
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fileErr("member %q appears twice", name)
		}
		seen[name] = true
		switch name {
		case "version":
			tok, err := p.dec.Token()
			if err != nil {
				return nil, fileErr("version: %v", err)
			}
			n, ok := tok.(json.Number)
			if !ok {
				return nil, fileErr("version must be the number %d", KeyringFileVersion)
			}
			version = string(n)
		case "active":
			if active, err = p.str("active"); err != nil {
				return nil, err
			}
		case "keys":
			if keys, err = p.keys(); err != nil {
				return nil, err
			}
		default:
			return nil, fileErr("unknown member %q", name)
		}
	}
	if err := p.delim('}', "unterminated object"); err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, fileErr("trailing data after the keyring object")
	}
	switch {
	case !seen["version"]:
		return nil, fileErr("missing version")
	case version != strconv.Itoa(KeyringFileVersion):
		return nil, fileErr("unsupported version %s (want %d)", version, KeyringFileVersion)
	case !seen["active"]:
		return nil, fileErr("missing active")
	case len(keys) == 0:
		return nil, fileErr("keys must list at least the active key")
	}
	var (
		act          Key
		found        bool
		verification = make([]Key, 0, len(keys)-1)
	)
	for _, k := range keys {
		if k.id == active && !found {
			act, found = k, true
		} else {
			verification = append(verification, k)
		}
	}
	if !found {
		return nil, fileErr("active key %q is not listed in keys", active)
	}
	r, err := newKeyring(act, verification)
	if err != nil {
		return nil, fmt.Errorf("seal: keyring file: %w", err)
	}
	return r, nil
}

type fileParser struct{ dec *json.Decoder }

func fileErr(format string, args ...any) error {
	return fmt.Errorf("seal: keyring file: "+format, args...)
}

func (p fileParser) delim(d json.Delim, msg string) error {
	tok, err := p.dec.Token()
	if err != nil {
		return fileErr("%s: %v", msg, err)
	}
	if tok != d {
		return fileErr("%s", msg)
	}
	return nil
}

func (p fileParser) str(what string) (string, error) {
	tok, err := p.dec.Token()
	if err != nil {
		return "", fileErr("%s: %v", what, err)
	}
	s, ok := tok.(string)
	if !ok {
		return "", fileErr("%s must be a string", what)
	}
	return s, nil
}

func (p fileParser) keys() ([]Key, error) {
	if err := p.delim('[', "keys must be an array"); err != nil {
		return nil, err
	}
	var keys []Key
	for p.dec.More() {
		if err := p.delim('{', "each entry of keys must be an object"); err != nil {
			return nil, err
		}
		var id, secret string
		var haveID, haveSecret bool
		for p.dec.More() {
			name, err := p.str("member name")
			if err != nil {
				return nil, err
			}
			switch {
			case name == "id" && !haveID:
				id, err = p.str("id")
				haveID = true
			case name == "secret" && !haveSecret:
				secret, err = p.str("secret")
				haveSecret = true
			case name == "id" || name == "secret":
				return nil, fileErr("key %d: member %q appears twice", len(keys), name)
			default:
				return nil, fileErr("key %d: unknown member %q", len(keys), name)
			}
			if err != nil {
				return nil, err
			}
		}
		if err := p.delim('}', "unterminated key object"); err != nil {
			return nil, err
		}
		if !haveID || !haveSecret {
			return nil, fileErr("key %d: id and secret are required", len(keys))
		}
		raw, err := decodeSecret(secret)
		if err != nil {
			return nil, fileErr("key %q: secret must be canonical unpadded base64url", truncateForError(id))
		}
		k, err := NewKey(id, raw)
		clear(raw)
		if err != nil {
			return nil, fmt.Errorf("seal: keyring file: key %d: %w", len(keys), err)
		}
		keys = append(keys, k)
	}
	if err := p.delim(']', "unterminated keys array"); err != nil {
		return nil, err
	}
	return keys, nil
}

func decodeSecret(s string) ([]byte, error) {
	b, ok := decodeCanonical(s)
	if !ok {
		return nil, errors.New("not canonical unpadded base64url")
	}
	return b, nil
}

// MarshalFile returns the keyring in the format read by [ParseKeyringFile]:
// the active key first, then the verification keys sorted by id. The output
// contains every secret; besides [Key.Secret] it is the only way this
// package reveals key bytes. Write it only to storage meant for secrets.
func (r *Keyring) MarshalFile() ([]byte, error) {
	if r == nil || !r.active.valid() {
		return nil, errors.New("seal: MarshalFile: nil or zero Keyring")
	}
	var b bytes.Buffer
	b.WriteString("{\n  \"version\": ")
	b.WriteString(strconv.Itoa(KeyringFileVersion))
	b.WriteString(",\n  \"active\": ")
	b.WriteString(strconv.Quote(r.active.id))
	b.WriteString(",\n  \"keys\": [")
	for i, k := range append([]Key{r.active}, r.verification...) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    {\"id\": ")
		b.WriteString(strconv.Quote(k.id))
		b.WriteString(", \"secret\": \"")
		b.WriteString(b64.EncodeToString(k.mat().secret))
		b.WriteString("\"}")
	}
	b.WriteString("\n  ]\n}\n")
	return b.Bytes(), nil
}

// LoadKeyringFile reads and parses a keyring file. Because the file holds
// secret keys, it refuses (on systems other than Windows) a file that group
// or others may access in any way (mode & 0o077 != 0), as well as anything
// other than a regular file.
func LoadKeyringFile(path string) (*Keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("seal: keyring file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("seal: keyring file %s has mode %#o, which lets group or others access secret keys; restrict it with chmod 600", path, perm)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyringFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("seal: reading keyring file %s: %w", path, err)
	}
	r, err := ParseKeyringFile(data)
	clear(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return r, nil
}

// WriteKeyringFile writes r to path atomically, with mode 0600: it writes
// and syncs a temporary file in the same directory, then renames it over
// path. A symbolic link at path is replaced, not followed.
func WriteKeyringFile(path string, r *Keyring) (err error) {
	data, err := r.MarshalFile()
	if err != nil {
		return err
	}
	defer clear(data)
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("seal: writing keyring file: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("seal: writing keyring file: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("seal: writing keyring file: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	// Make the rename durable; not every platform can sync a directory.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
