package elicit

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPolicyText bounds how much of one name, title or description the secret
// policy tokenises. Anything longer is inspected up to this many bytes.
const maxPolicyText = 64 << 10

// words splits s into lower-case words. Words are separated by any rune that
// is neither a letter nor a digit (spaces, '_', '-', '.', '/', …), at
// camelCase boundaries ("apiKey" → api key, "APIKey" → api key) and at every
// boundary between letters and digits ("oauth2Token" → oauth 2 token,
// "2FA" → 2 fa). Invalid UTF-8 bytes act as separators.
func words(s string) []string {
	if len(s) > maxPolicyText {
		s = s[:maxPolicyText]
	}
	const (
		none = iota
		lower
		upper
		digit
	)
	var (
		out  []string
		cur  []rune
		prev = none
	)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
		prev = none
	}
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			flush()
		case unicode.IsLetter(r):
			isUp := unicode.IsUpper(r)
			switch {
			case prev == digit:
				flush()
			case isUp && prev == lower:
				flush()
			case !isUp && prev == upper && len(cur) >= 2:
				// End of an acronym: "APIKey" → "API" + "Key".
				last := cur[len(cur)-1]
				cur = cur[:len(cur)-1]
				flush()
				cur = append(cur, last)
			}
			cur = append(cur, unicode.ToLower(r))
			if isUp {
				prev = upper
			} else {
				prev = lower
			}
		case unicode.IsDigit(r):
			if prev == lower || prev == upper {
				flush()
			}
			cur = append(cur, r)
			prev = digit
		case r == '\'' || r == '\u2019':
			// Apostrophes do not split: "user's" stays one word ("users" after
			// dropping the apostrophe is not wanted either), so drop it
			// without separating.
			continue
		default:
			flush()
		}
	}
	flush()
	return out
}

// isNumeric reports whether w consists of digits only.
func isNumeric(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// wordMatches reports whether token t matches the policy word w, allowing a
// plural "s" when plural is true.
func wordMatches(t, w string, plural bool) bool {
	if t == w {
		return true
	}
	return plural && !isNumeric(w) && len(t) == len(w)+1 && strings.HasPrefix(t, w) && t[len(w)] == 's'
}

// seqAt reports whether the word sequence p occurs in toks at index i.
func seqAt(toks []string, i int, p []string, plural bool) bool {
	if i+len(p) > len(toks) {
		return false
	}
	for j, w := range p {
		// Plurals are accepted on the last word of a phrase only
		// ("api keys", not "apis key").
		if !wordMatches(toks[i+j], w, plural && j == len(p)-1) {
			return false
		}
	}
	return true
}
