package elicit

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrSecretField is matched (with errors.Is) by every *SecretFieldError: a
// form field that appears to request a secret, which form mode must not do.
var ErrSecretField = errors.New("elicit: form field requests a secret")

// SecretFieldError reports a form field refused by a [SecretPolicy] or by a
// secret hint in an authored schema. Its message names the field, the rule
// and the matched term from the rule table; it never quotes the title or
// description it inspected.
type SecretFieldError struct {
	// Field is the property name of the refused field.
	Field string
	// Rule is the ID of the rule that matched ("password", "card-number", …),
	// or "schema-hint" for writeOnly / x-secret / format "password".
	Rule string
	// Reason describes the kind of secret, e.g. "a password or passphrase".
	Reason string
	// Source says where the match was found: "name", "title",
	// "description", or the hint keyword.
	Source string
	// Term is the rule term that matched (a phrase, head, stem or pattern).
	Term string
}

// Error describes the refusal.
func (e *SecretFieldError) Error() string {
	return fmt.Sprintf("elicit: form field %s appears to request %s (rule %q matched %q in its %s); request secrets with URL mode instead",
		quoteTrunc(e.Field), e.Reason, e.Rule, e.Term, e.Source)
}

// Is reports whether target is ErrSecretField.
func (e *SecretFieldError) Is(target error) bool { return target == ErrSecretField }

// Rule is one entry of a [SecretPolicy]. Text is compared after
// normalisation into lower-case words (see the package documentation):
// camelCase, snake_case, kebab-case, dots, digits and spacing all split
// words, so "apiKey", "API_KEY", "api-key" and "API key" are the same two
// words. A rule must have at least one of Phrases, Heads, Stems or Pattern.
type Rule struct {
	// ID names the rule in errors and in [SecretPolicy.Without]. IDs are
	// unique within a policy.
	ID string
	// Reason describes the secret for error messages, e.g. "an API key".
	// Empty means the ID.
	Reason string
	// Phrases are word sequences that flag a field wherever they occur in
	// its name, title or description ("api key", "cvv"). The last word may
	// be plural. A multi-word phrase of six or more letters also matches
	// inside a single run-together word ("apikey" in "myapikey").
	Phrases []string
	// Heads are word sequences that flag a field only when they end its
	// name or title (ignoring trailing numbers, a version suffix and filler
	// words such as "value" or "input"). They catch words that are secrets
	// as the thing asked for but not as modifiers: "token" flags "GitHub
	// token" but not "token count". Heads match singular forms only, and a
	// one-word head of five or more letters also matches the end of a
	// run-together word ("githubtoken").
	Heads []string
	// Stems are lower-case letter/digit substrings that flag a field when
	// they occur inside any single word, for run-together spellings such as
	// "newpassword".
	Stems []string
	// Except are word sequences that cancel a match they overlap: "public
	// ssh key" cancels the "ssh key" phrase.
	Except []string
	// Context, when non-empty, makes the rule fire only if one of these
	// words or phrases also occurs somewhere in the field's name, title or
	// description ("expiry" is a secret only next to "card").
	Context []string
	// Pattern, when non-nil, flags a field whose normalised name, title or
	// description (lower-case words joined by single spaces) it matches.
	Pattern *regexp.Regexp
}

// compiledRule is a Rule with its terms split into words.
type compiledRule struct {
	rule     Rule
	phrases  [][]string
	squashed []string // per phrase: run-together form, or "" when too short
	heads    [][]string
	except   [][]string
	context  [][]string
}

func compileRule(r Rule) (compiledRule, error) {
	r = cloneRule(r)
	c := compiledRule{rule: r}
	if strings.TrimSpace(r.ID) == "" {
		return c, errors.New("secret policy rule has an empty ID")
	}
	if c.rule.Reason == "" {
		c.rule.Reason = r.ID
	}
	if len(r.Phrases) == 0 && len(r.Heads) == 0 && len(r.Stems) == 0 && r.Pattern == nil {
		return c, fmt.Errorf("secret policy rule %q has no phrases, heads, stems or pattern", r.ID)
	}
	split := func(kind string, terms []string) ([][]string, error) {
		out := make([][]string, 0, len(terms))
		for _, t := range terms {
			w := words(t)
			if len(w) == 0 {
				return nil, fmt.Errorf("secret policy rule %q: %s %q contains no words", r.ID, kind, t)
			}
			out = append(out, w)
		}
		return out, nil
	}
	var err error
	if c.phrases, err = split("phrase", r.Phrases); err != nil {
		return c, err
	}
	if c.heads, err = split("head", r.Heads); err != nil {
		return c, err
	}
	if c.except, err = split("exception", r.Except); err != nil {
		return c, err
	}
	if c.context, err = split("context term", r.Context); err != nil {
		return c, err
	}
	c.squashed = make([]string, len(c.phrases))
	for i, p := range c.phrases {
		if len(p) > 1 {
			if s := strings.Join(p, ""); len(s) >= 6 {
				c.squashed[i] = s
			}
		}
	}
	for _, s := range r.Stems {
		if w := words(s); len(w) != 1 || w[0] != s {
			return c, fmt.Errorf("secret policy rule %q: stem %q must be one lower-case word of letters and digits", r.ID, s)
		}
	}
	return c, nil
}

func cloneRule(r Rule) Rule {
	r.Phrases = slices.Clone(r.Phrases)
	r.Heads = slices.Clone(r.Heads)
	r.Stems = slices.Clone(r.Stems)
	r.Except = slices.Clone(r.Except)
	r.Context = slices.Clone(r.Context)
	return r
}

// isQualifier reports whether a word that follows a matched phrase turns the
// phrase into a modifier of something that is not itself a secret:
// "password length", "token count", "api key name".
func isQualifier(w string) bool {
	return qualifierWord(w) || (len(w) > 1 && w[len(w)-1] == 's' && qualifierWord(w[:len(w)-1]))
}

func qualifierWord(w string) bool {
	switch w {
	case "count", "length", "len", "limit", "budget", "usage", "quota",
		"policy", "policies", "strength", "requirement", "rule", "complexity",
		"hint", "reminder", "reset", "expiry", "expiration", "expire", "lifetime", "ttl",
		"age", "rotation", "type", "format", "name", "nickname", "label",
		"description", "id", "manager", "fingerprint", "size", "scope",
		"endpoint", "url", "uri", "provider", "issuer", "prefix", "last",
		"change", "changed", "created", "updated", "symbol", "address",
		"price", "balance", "amount", "contract", "standard", "path", "filename",
		"location", "directory", "dir":
		return true
	}
	return false
}

// isFiller reports whether a trailing label word only restates that a value
// is entered ("token value", "password input", "pin entry").
func isFiller(w string) bool {
	switch w {
	case "value", "values", "input", "entry", "text", "string", "str", "val",
		"field", "raw", "here", "please", "again", "confirm", "confirmation",
		"repeat", "retype", "data", "info":
		return true
	}
	return false
}

// policyIndex speeds up matching: phrases are looked up by their first
// word, and substring terms (run-together phrases and stems) are kept in one
// list. It is immutable once built and shared by policy copies.
type policyIndex struct {
	byFirst    map[string][]termRef
	subs       []termRef
	hasPattern bool
}

// termRef names one term of one rule.
type termRef struct {
	rule int    // index into SecretPolicy.rules
	term int    // index into the rule's phrases (or stems when stem is set)
	sub  string // the substring to look for (subs only)
	stem bool
}

func buildIndex(rules []compiledRule) *policyIndex {
	idx := &policyIndex{byFirst: make(map[string][]termRef)}
	for ri := range rules {
		r := &rules[ri]
		for pi, p := range r.phrases {
			idx.byFirst[p[0]] = append(idx.byFirst[p[0]], termRef{rule: ri, term: pi})
			if r.squashed[pi] != "" {
				idx.subs = append(idx.subs, termRef{rule: ri, term: pi, sub: r.squashed[pi]})
			}
		}
		for si, st := range r.rule.Stems {
			idx.subs = append(idx.subs, termRef{rule: ri, term: si, sub: st, stem: true})
		}
		if r.rule.Pattern != nil {
			idx.hasPattern = true
		}
	}
	return idx
}

// matchHead reports the first head of r that ends the label toks.
func (r *compiledRule) matchHead(toks []string) (string, bool) {
	end := headEnd(toks)
	if end <= 0 {
		return "", false
	}
	for hi, h := range r.heads {
		start := end - len(h)
		if start >= 0 && seqAt(toks, start, h, false) && !r.excepted(toks, start, end) {
			return r.rule.Heads[hi], true
		}
		if len(h) == 1 && len(h[0]) >= 5 && len(toks[end-1]) > len(h[0]) &&
			strings.HasSuffix(toks[end-1], h[0]) && !r.excepted(toks, end-1, end) {
			return r.rule.Heads[hi], true
		}
	}
	return "", false
}

// headEnd returns the exclusive end index of the head of a label: trailing
// numbers, version suffixes ("v2") and filler words are skipped.
func headEnd(toks []string) int {
	end := len(toks)
	for end > 0 {
		t := toks[end-1]
		if isNumeric(t) || (end < len(toks) && t == "v") || (end > 1 && isFiller(t)) {
			end--
			continue
		}
		break
	}
	return end
}

// suppressed reports whether the match toks[s:e] is followed by a qualifier
// or overlapped by an exception.
func (r *compiledRule) suppressed(toks []string, s, e int) bool {
	if e < len(toks) && isQualifier(toks[e]) {
		return true
	}
	return r.excepted(toks, s, e)
}

func (r *compiledRule) excepted(toks []string, s, e int) bool {
	for _, x := range r.except {
		for j := max(0, e-len(x)); j <= s && j+len(x) <= len(toks); j++ {
			if j+len(x) > s && seqAt(toks, j, x, true) {
				return true
			}
		}
	}
	return false
}

// hasContext reports whether any context term occurs in any of the token
// lists.
func (r *compiledRule) hasContext(all ...[]string) bool {
	if len(r.context) == 0 {
		return true
	}
	for _, toks := range all {
		for _, c := range r.context {
			for i := 0; i+len(c) <= len(toks); i++ {
				if seqAt(toks, i, c, true) {
					return true
				}
			}
		}
	}
	return false
}

// SecretPolicy refuses form fields that appear to ask for secrets. It is an
// immutable value; [SecretPolicy.With] and [SecretPolicy.Without] return
// modified copies. The zero SecretPolicy is the default policy (see the
// package documentation for the rule set).
//
// A policy built with an invalid rule, or told to drop an unknown rule ID,
// fails closed: [SecretPolicy.Err] reports the problem and every check
// returns it.
type SecretPolicy struct {
	set   bool
	rules []compiledRule
	idx   *policyIndex
	err   error
}

// DefaultSecretPolicy returns the reviewed default policy. It is the same as
// the zero SecretPolicy.
func DefaultSecretPolicy() SecretPolicy {
	return defaultPolicy
}

// defaultPolicy is the compiled default rule set: computed once at package
// initialisation and never modified (policies only ever copy it).
var defaultPolicy = NewSecretPolicy(DefaultRules()...)

// NewSecretPolicy returns a policy with exactly the given rules, without the
// defaults. Most callers want DefaultSecretPolicy().With(...) instead.
func NewSecretPolicy(rules ...Rule) SecretPolicy {
	p := SecretPolicy{set: true}
	return p.add(rules)
}

func (p SecretPolicy) resolved() SecretPolicy {
	if !p.set {
		return DefaultSecretPolicy()
	}
	return p
}

func (p SecretPolicy) add(rules []Rule) SecretPolicy {
	out := SecretPolicy{set: true, rules: slices.Clone(p.rules), err: p.err}
	for _, r := range rules {
		c, err := compileRule(r)
		if err == nil && slices.ContainsFunc(out.rules, func(x compiledRule) bool { return x.rule.ID == r.ID }) {
			err = fmt.Errorf("secret policy rule ID %q is used twice", r.ID)
		}
		if err != nil {
			if out.err == nil {
				out.err = fmt.Errorf("elicit: invalid secret policy: %w", err)
			}
			continue
		}
		out.rules = append(out.rules, c)
	}
	out.idx = buildIndex(out.rules)
	return out
}

// With returns a copy of p extended with the given rules. Rule IDs must be
// new; an invalid or duplicate rule makes the returned policy fail closed
// (see [SecretPolicy.Err]).
func (p SecretPolicy) With(rules ...Rule) SecretPolicy {
	return p.resolved().add(rules)
}

// Without returns a copy of p without the rules with the given IDs. Removing
// a default rule is a reviewed decision: prefer rewording a field, or a
// narrower replacement rule, over dropping a whole category. An unknown ID
// makes the returned policy fail closed, so typos are not silent.
func (p SecretPolicy) Without(ids ...string) SecretPolicy {
	p = p.resolved()
	out := SecretPolicy{set: true, err: p.err}
	for _, id := range ids {
		if !slices.ContainsFunc(p.rules, func(x compiledRule) bool { return x.rule.ID == id }) && out.err == nil {
			out.err = fmt.Errorf("elicit: invalid secret policy: no rule with ID %q to remove", id)
		}
	}
	for _, r := range p.rules {
		if !slices.Contains(ids, r.rule.ID) {
			out.rules = append(out.rules, r)
		}
	}
	out.idx = buildIndex(out.rules)
	return out
}

// Rules returns a copy of the policy's rules in order.
func (p SecretPolicy) Rules() []Rule {
	p = p.resolved()
	out := make([]Rule, len(p.rules))
	for i, r := range p.rules {
		out[i] = cloneRule(r.rule)
	}
	return out
}

// Err reports why the policy is invalid, or nil.
func (p SecretPolicy) Err() error { return p.resolved().err }

// CheckField applies the policy to one free-entry field's name, title and
// description. It returns a *SecretFieldError (matching [ErrSecretField])
// for the first rule that matches, the policy's own error if it is invalid,
// or nil.
func (p SecretPolicy) CheckField(name, title, description string) error {
	p = p.resolved()
	if p.err != nil {
		return p.err
	}
	nameToks, titleToks, descToks := words(name), labelWords(title), words(description)
	type surface struct {
		source string
		toks   [][]string // segments; labels are split at punctuation for heads
		label  bool
	}
	surfaces := []surface{
		{"name", [][]string{nameToks}, true},
		{"title", titleToks, true},
		{"description", [][]string{descToks}, false},
	}
	if p.idx == nil {
		p.idx = buildIndex(p.rules)
	}
	titleAll := slices.Concat(titleToks...)
	ctx := make([]int8, len(p.rules)) // 0 unknown, 1 present, -1 absent
	hasContext := func(ri int) bool {
		if ctx[ri] == 0 {
			ctx[ri] = -1
			if p.rules[ri].hasContext(nameToks, titleAll, descToks) {
				ctx[ri] = 1
			}
		}
		return ctx[ri] == 1
	}
	// Phrases, stems and patterns of every rule take precedence over heads
	// (so "privateKey" is reported as a private key, not as "<vendor>
	// key"); among those, the rule listed first wins, then the surface in
	// the order name, title, description.
	best := len(p.rules)
	var found *SecretFieldError
	hit := func(ri int, source, term string) {
		r := &p.rules[ri]
		best = ri
		found = &SecretFieldError{Field: name, Rule: r.rule.ID, Reason: r.rule.Reason, Source: source, Term: term}
	}
	subMemo := make(map[string][]int)
	for _, s := range surfaces {
		for _, seg := range s.toks {
			for i, t := range seg {
				cands := p.idx.byFirst[t]
				if n := len(t); n > 1 && t[n-1] == 's' {
					cands = slices.Concat(cands, p.idx.byFirst[t[:n-1]])
				}
				for _, c := range cands {
					r := &p.rules[c.rule]
					ph := r.phrases[c.term]
					if c.rule < best && seqAt(seg, i, ph, true) && hasContext(c.rule) && !r.suppressed(seg, i, i+len(ph)) {
						hit(c.rule, s.source, r.rule.Phrases[c.term])
					}
				}
				if len(t) < 3 {
					continue
				}
				subs, ok := subMemo[t]
				if !ok {
					for k, c := range p.idx.subs {
						if len(t) >= len(c.sub) && strings.Contains(t, c.sub) {
							subs = append(subs, k)
						}
					}
					subMemo[t] = subs
				}
				for _, k := range subs {
					c := p.idx.subs[k]
					r := &p.rules[c.rule]
					if c.rule < best && hasContext(c.rule) && !r.suppressed(seg, i, i+1) {
						term := c.sub
						if !c.stem {
							term = r.rule.Phrases[c.term]
						}
						hit(c.rule, s.source, term)
					}
				}
			}
			if p.idx.hasPattern && len(seg) > 0 {
				joined := strings.Join(seg, " ")
				for ri := 0; ri < best; ri++ {
					if pat := p.rules[ri].rule.Pattern; pat != nil && hasContext(ri) && pat.MatchString(joined) {
						hit(ri, s.source, pat.String())
					}
				}
			}
		}
	}
	if found != nil {
		return found
	}
	for ri := range p.rules {
		if len(p.rules[ri].heads) == 0 || !hasContext(ri) {
			continue
		}
		for _, s := range surfaces {
			if !s.label {
				continue
			}
			for _, seg := range s.toks {
				if term, ok := p.rules[ri].matchHead(seg); ok {
					hit(ri, s.source, term)
					return found
				}
			}
		}
	}
	return nil
}

// labelWords splits a title into segments at bracketing and list
// punctuation, so that each segment's last word can be a head: "GitHub token
// (classic)" has heads "token" and "classic". When there are several
// segments the whole title is added as a last segment, so phrases that span
// the punctuation are still seen.
func labelWords(s string) [][]string {
	if len(s) > maxPolicyText {
		s = s[:maxPolicyText]
	}
	var out [][]string
	for seg := range strings.FieldsFuncSeq(s, func(r rune) bool {
		return strings.ContainsRune("()[]{}:;,|/<>", r) || r == utf8.RuneError
	}) {
		if w := words(seg); len(w) > 0 {
			out = append(out, w)
		}
	}
	if len(out) > 1 {
		out = append(out, words(s))
	}
	return out
}

// CheckSchema applies the policy to every free-entry field of s: strings
// without options, numbers and integers. Selection fields (booleans, enums,
// multi-selects) only return values the server listed itself, so they cannot
// carry a user's secret and are not inspected. The result joins one
// *SecretFieldError per refused field.
func (p SecretPolicy) CheckSchema(s *Schema) error {
	p = p.resolved()
	if p.err != nil {
		return p.err
	}
	if s == nil {
		return errors.New("elicit: check secret policy: nil schema")
	}
	var errs []error
	for _, f := range s.props {
		if !f.kind.freeEntry() {
			continue
		}
		if err := p.CheckField(f.name, f.title, f.description); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// quoteTrunc quotes s for an error message, truncating it to a bounded
// length on a rune boundary.
func quoteTrunc(s string) string {
	const max = 64
	if len(s) <= max {
		return fmt.Sprintf("%q", s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", s[:cut])
}
