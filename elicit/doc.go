// Package elicit is the elicitation toolkit under weft's form and URL
// declarations (MCP 2026-07-28): form-mode schemas, a secret-field policy,
// validation of the user's answers, result decoding, and URL-mode URL checks
// with opaque handles.
//
// In MCP 2026-07-28 a tool that needs the user's answer returns
// input_required with keyed input requests; each elicitation is an
// elicitation/create request, built in package weft by a declaration
// (weft.Form, weft.FormOf, weft.URL). The client retries the original call
// with inputResponses[key] = {"action": "accept"|"decline"|"cancel",
// "content"?: {...}}, which [Answer] (or [ParseResult] and
// [Schema.Validate]) interprets; the declarations' Answer methods call it.
//
// # Form mode
//
// [BuildSchema] assembles fields ([StringField], [NumberField],
// [IntegerField], [BooleanField], [EnumField], [TitledEnumField],
// [MultiSelectField], [TitledMultiSelectField], refined with chainable
// setters) into a requestedSchema of the restricted shape the specification
// allows: a flat object of primitive properties —
//
//   - string: title, description, minLength, maxLength, format (email, uri,
//     date, date-time), default;
//   - number / integer: title, description, minimum, maximum, default;
//   - boolean: title, description, default;
//   - single-select: "type":"string" with "enum" (optionally the legacy
//     "enumNames") or a titled "oneOf":[{const, title}], default;
//   - multi-select: "type":"array" with minItems, maxItems and "items" of
//     {"type":"string","enum":[...]} or {"anyOf":[{const, title}]}, default.
//
// [ParseSchema] verifies a hand-written requestedSchema against the same
// shape (rejecting unknown keywords, nesting, inconsistent bounds and
// defaults that violate their own field). Numbers are exact decimals
// throughout: bounds keep their literal (set with [Field.Min],
// [Field.MinInt] or [Field.MinDecimal]) and comparisons are exact, so 3.50
// is within a maximum of 3.5.
//
// # Secret-field policy
//
// Form mode must not request sensitive information; secrets go through URL
// mode. Before a form reaches the client, a [SecretPolicy] (the server's
// Options.SecretPolicy) inspects the name,
// title and description of every free-entry field (strings without options,
// numbers, integers) and refuses the form with a *SecretFieldError (matching
// [ErrSecretField]) when one appears to ask for
//
//   - a password, passphrase or passcode ("password", "passwd", "pwd",
//     "newPassword");
//   - a PIN ("pin", "PIN code", "4-digit PIN");
//   - an API key ("api key", "access key", "secret key", "license key", or a
//     label ending in "key" such as "OpenAI key", except data keys like
//     "sort key", "primary key", "issue key" or "public key");
//   - an access, refresh, bearer, auth, ID or session token, a JWT, or a
//     label ending in "token" ("GitHub token") or "PAT";
//   - a client, shared, app, webhook or signing secret, or a label ending in
//     "secret";
//   - a private or signing key, key pair or keystore; an SSH key (except a
//     "public SSH key");
//   - a session cookie or session ID, or a label ending in "cookie";
//   - payment card data: card number, PAN (next to card words), CVV / CVC /
//     CSC / card security code, or expiry (next to card words);
//   - bank account data: IBAN, bank account number, routing / ABA number,
//     sort code, BSB, or an account number next to bank words;
//   - a verification, one-time, OTP / TOTP / HOTP, 2FA / MFA, SMS, login,
//     access, authorization or confirmation code;
//   - a recovery or backup code, recovery key, reset code or token, or a
//     security-question answer;
//   - a wallet seed phrase, recovery phrase, mnemonic or BIP39 words;
//   - a credential.
//
// [DefaultRules] is the authoritative table. Text is normalised before
// matching: camelCase, snake_case, kebab-case, dots, digits, spacing and case
// are folded into lower-case words ("APIKey", "api_key" and "API key" are
// the same), plurals are accepted on the last word of a phrase, and
// run-together spellings are caught by stems ("newpassword") and by
// multi-word phrases squeezed into one word ("myapikey"). Words that name
// the secret only as the thing asked for ("token", "secret", "key", "pin",
// "cookie") count only when they end a name or title, so "token count",
// "keyboard layout", "pinpoint", "pin to top" and "description" are not
// refused. A phrase followed by a qualifier that makes it describe something
// else — count, length, limit, policy, strength, hint, reset, expiry, type,
// format, name, label, id, path, … ("password length", "api key name",
// "token expiry") — is not a match either.
//
// Selection fields (booleans, enums, multi-selects) are not inspected: they
// return only values the server listed, so a user cannot type a secret into
// them. Nor is the request message, which often names secrets the form is
// not asking for ("Name your new API key"): give each field a name that says
// what it holds. Authored schemas that mark a field secret with "writeOnly":
// true, "x-secret": true, "x-sensitive": true or "format": "password" are
// refused by [ParseSchema] with a *SecretFieldError as well.
//
// Field spelling is not a universal semantic classifier. The policy is a
// reviewed guard against the obvious and the accidental, in English; it does
// not understand meaning, other languages or deliberate evasion ("enter the
// string from the back of your card" in a field called "value"), and it
// will occasionally refuse an innocent field whose description mentions a
// secret. Reword such a field, or adjust the server's policy:
//
//	policy := elicit.DefaultSecretPolicy().
//		With(elicit.Rule{ID: "employee-badge", Reason: "a badge code", Phrases: []string{"badge code"}}).
//		Without("card-expiry") // a reviewed decision
//	s, err := weft.NewServer(impl, &weft.Options{SecretPolicy: policy})
//	if err != nil {
//		log.Fatal(err)
//	}
//
// A policy with an invalid rule, or one told to remove an unknown rule,
// fails closed (see [SecretPolicy.Err]).
//
// # Answers
//
// Treat every input response as untrusted. [ParseResult] checks the protocol
// shape (the action, content only with accept, content values limited to
// strings, numbers, booleans and arrays of strings). [Schema.Validate] checks
// accepted content against the requested schema and reports a
// *ValidationError whose problems are safe to show the user. [Answer] does
// both and returns an [Action] so that accept, decline and cancel are
// explicit branches. Validation and typed decoding (weft.FormOf's Answer
// does both) are not policy: they do not establish that the key was the one
// you issued, that the values make business sense, or that the user may
// perform the action — correlate keys, re-request missing responses, apply
// your own rules, and authorise again before any side effect.
//
// # URL mode
//
// A URL-mode request (weft.URL) carries a URL the server checks with
// [URLPolicy.Check] (the server's Options.URLElicitation): a server-owned
// HTTPS origin from [URLPolicy.AllowedOrigins] (loopback over http only in
// Development), and no secrets or user data in userinfo, query or fragment.
// The recommended shape is an opaque, single-purpose handle in the path:
// [NewHandle] makes one (256 random bits) and [HandleURL] appends it to a
// base URL. The server stores the handle bound to the verified initiating
// user and an expiry, checks on the page that the visitor is that same
// user, and never copies credentials obtained out of band into an MCP
// response. Accepting a URL-mode elicitation means only that the user agreed
// to open the URL.
package elicit
