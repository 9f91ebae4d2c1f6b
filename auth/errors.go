package auth

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Errors wrapped by the errors of [JWTValidator.Validate],
// [Introspector.Introspect] and [StaticTokens.Lookup]; test for them with errors.Is. The wrapping error
// says what exactly failed. None of them ever contains the token.
var (
	// ErrNoToken: the request carried no bearer token.
	ErrNoToken = errors.New("auth: no bearer token")
	// ErrUnknownToken: a static token that is not in the token file.
	ErrUnknownToken = errors.New("auth: unknown bearer token")
	// ErrMalformedToken: the token is not a well-formed signed JWT.
	ErrMalformedToken = errors.New("auth: malformed token")
	// ErrAlgorithm: the token's "alg" is not allowed, or the selected key
	// cannot be used with it.
	ErrAlgorithm = errors.New("auth: token algorithm not accepted")
	// ErrTokenType: the token's "typ" header is not an access token type.
	ErrTokenType = errors.New("auth: token type not accepted")
	// ErrUnknownKey: no signing key of the key source matches the token's
	// "kid", even after a refresh.
	ErrUnknownKey = errors.New("auth: no signing key matches the token")
	// ErrSignature: the signature does not verify.
	ErrSignature = errors.New("auth: token signature is invalid")
	// ErrIssuer: the "iss" claim is not the configured issuer.
	ErrIssuer = errors.New("auth: token issuer is not trusted")
	// ErrAudience: the "aud" claim does not name this resource.
	ErrAudience = errors.New("auth: token audience does not include this resource")
	// ErrExpired: the token's "exp" has passed.
	ErrExpired = errors.New("auth: token has expired")
	// ErrNotYetValid: the token's "nbf" or "iat" lies in the future.
	ErrNotYetValid = errors.New("auth: token is not valid yet")
	// ErrClaims: a claim is missing or has the wrong type.
	ErrClaims = errors.New("auth: token claims are invalid")
	// ErrKeySource: the signing keys could not be obtained (a server-side
	// failure, not the client's).
	ErrKeySource = errors.New("auth: signing keys are unavailable")
	// ErrInactive: the introspection endpoint answered that the token is
	// not active (revoked, expired, unknown).
	ErrInactive = errors.New("auth: token is not active")
	// ErrIntrospection: the introspection endpoint could not be asked or
	// gave no usable answer (a server-side failure, not the client's).
	ErrIntrospection = errors.New("auth: token introspection failed")
	// ErrConfig: the validator or metadata is misconfigured.
	ErrConfig = errors.New("auth: invalid configuration")
)

// describe returns the client-visible error_description for a token
// rejection: a fixed sentence per failure class, never data from the token.
func describe(err error) string {
	switch {
	case errors.Is(err, ErrExpired):
		return "The access token expired"
	case errors.Is(err, ErrNotYetValid):
		return "The access token is not valid yet"
	case errors.Is(err, ErrAudience):
		return "The access token was not issued for this resource"
	case errors.Is(err, ErrIssuer):
		return "The access token was not issued by a trusted authorization server"
	case errors.Is(err, ErrUnknownToken):
		return "The access token is not recognized"
	case errors.Is(err, ErrInactive):
		return "The access token is not active"
	}
	return "The access token is invalid"
}

// quoteUntrusted formats a value taken from an unverified or foreign source
// (a JOSE header, a claim) for an error message: Go-quoted, so it cannot
// break a log line, and truncated.
func quoteUntrusted(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q...", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}
