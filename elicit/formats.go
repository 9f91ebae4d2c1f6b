package elicit

import (
	"net/mail"
	"net/url"
	"strings"
)

// validEmail reports whether s is an email address in the "email" format: an
// RFC 5322 addr-spec restricted to the forms people actually use — an ASCII
// dot-atom local part (no quoted strings or comments) of at most 64 bytes, an
// "@", and a domain of LDH labels (no address literals) of at most 253 bytes,
// 254 bytes in all. net/mail must parse it to exactly the same bare address.
func validEmail(s string) bool {
	if len(s) > 254 {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 || !dotAtom(local) || !hostname(domain) {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s
}

// dotAtom reports whether s is an RFC 5322 dot-atom-text.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '.' && !strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", rune(c)) {
			return false
		}
	}
	return true
}

// hostname reports whether s is a DNS name of letter-digit-hyphen labels.
func hostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if !isAlnum(label[i]) && label[i] != '-' {
				return false
			}
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validURI reports whether s is an absolute URI in the "uri" format: RFC 3986
// characters only (ASCII, no spaces, well-formed percent escapes, at most one
// '#'), a scheme of ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), and accepted
// by net/url.
func validURI(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return false
	}
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for i := 1; i < colon; i++ {
		if c := s[i]; !isAlnum(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	hashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c <= ' ' || c >= 0x7f:
			return false
		case strings.IndexByte("\"<>\\^`{|}", c) >= 0:
			return false
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
		case c == '#':
			hashes++
		}
	}
	if hashes > 1 {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}

// digits parses s (all ASCII digits) as a non-negative integer.
func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// validDate reports whether s is an RFC 3339 full-date (YYYY-MM-DD) naming a
// real day of the proleptic Gregorian calendar.
func validDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && (y%4 == 0 && y%100 != 0 || y%400 == 0) {
		days = 29
	}
	return d <= days
}

// validDateTime reports whether s is an RFC 3339 date-time:
// full-date "T" HH:MM:SS [.fraction] ("Z" / ±HH:MM), with 'T' and 'Z' in
// either case. A leap second (:60) is accepted only at 23:59 UTC.
func validDateTime(s string) bool {
	if len(s) < 20 || !validDate(s[:10]) || (s[10] != 'T' && s[10] != 't') {
		return false
	}
	t := s[11:]
	if t[2] != ':' || t[5] != ':' {
		return false
	}
	hh, ok1 := digits(t[0:2])
	mm, ok2 := digits(t[3:5])
	ss, ok3 := digits(t[6:8])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 60 {
		return false
	}
	rest := t[8:]
	if rest != "" && rest[0] == '.' {
		i := 1
		for i < len(rest) && isDigit(rest[i]) {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	offset := 0 // minutes east of UTC
	switch {
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return false
		}
		offset = oh*60 + om
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return false
	}
	if ss == 60 {
		utc := ((hh*60+mm-offset)%1440 + 1440) % 1440
		return utc == 23*60+59
	}
	return true
}
