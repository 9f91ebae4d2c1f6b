package elicit

// cardContext returns the words that make an expiry date or a "PAN" a
// payment card detail.
func cardContext() []string {
	return []string{"card", "cc", "credit", "debit", "visa", "mastercard", "amex", "cardholder"}
}

// DefaultRules returns a fresh copy of the reviewed default rule set, in the
// order rules are applied. The package documentation summarises it; the
// table here is the authoritative list.
func DefaultRules() []Rule {
	rules := []Rule{
		{
			ID:     "one-time-code",
			Reason: "a one-time or verification code",
			Phrases: []string{"otp", "totp", "hotp", "one time password", "one time passcode",
				"one time code", "one time pin", "one time token", "one time key",
				"verification code", "verify code", "verification token", "verification pin",
				"confirmation code", "auth code", "authentication code", "authorization code",
				"login code", "log in code", "sign in code", "signin code", "logon code",
				"access code", "sms code", "text code", "email code",
				"2fa code", "2fa token", "2fa pin", "mfa code", "mfa token", "mfa pin",
				"two factor code", "two factor token", "2 step code", "two step code",
				"authenticator code", "magic code", "code we sent", "code sent to",
				"code we texted", "code we emailed", "texted code", "emailed code"},
			Heads: []string{"2fa", "mfa"},
			Stems: []string{"totp"},
		},
		{
			ID:     "recovery-code",
			Reason: "a recovery or backup code",
			Phrases: []string{"recovery code", "backup code", "recovery key", "recovery token",
				"reset code", "reset token", "rescue code", "scratch code", "emergency code"},
		},
		{
			ID:     "seed-phrase",
			Reason: "a wallet seed phrase or mnemonic",
			Phrases: []string{"seed phrase", "seed words", "recovery phrase", "secret phrase",
				"secret recovery phrase", "mnemonic", "bip39", "wallet seed", "wallet words",
				"xprv"},
		},
		{
			ID:     "security-answer",
			Reason: "an answer to a security question",
			Phrases: []string{"security answer", "secret answer", "security question",
				"secret question", "mothers maiden name"},
		},
		{
			ID:      "password",
			Reason:  "a password or passphrase",
			Phrases: []string{"password", "passwd", "pwd", "passphrase", "pass phrase", "passcode", "pass code", "login secret"},
			Stems:   []string{"passw", "passphrase", "passcode"},
			Except:  []string{"passwordless", "password less"},
		},
		{
			ID:     "pin",
			Reason: "a PIN",
			Phrases: []string{"pin code", "pin number", "pin no", "personal identification number",
				"atm pin", "card pin", "sim pin", "security pin", "secret pin", "digit pin",
				"your pin", "enter pin", "enter the pin", "new pin", "current pin", "old pin"},
			Heads: []string{"pin"},
		},
		{
			ID:     "card-number",
			Reason: "a payment card number",
			Phrases: []string{"card number", "card no", "card num", "credit card number",
				"debit card number", "cc number", "cc no", "cc num", "ccnum",
				"primary account number", "payment card number", "card details"},
			Heads:  []string{"credit card", "debit card", "payment card", "bank card"},
			Except: []string{"id card number", "identity card number", "sim card number"},
		},
		{
			ID:      "card-pan",
			Reason:  "a payment card number",
			Phrases: []string{"pan"},
			Context: cardContext(),
		},
		{
			ID:     "card-security-code",
			Reason: "a card security code (CVV/CVC)",
			Phrases: []string{"cvv", "cvc", "csc", "cvn", "card verification value",
				"card verification code", "card verification number", "card security code",
				"card code", "security code"},
			Stems: []string{"cvv", "cvc"},
		},
		{
			ID:     "card-expiry",
			Reason: "a payment card expiry date",
			Phrases: []string{"expiry", "expiration", "expiry date", "expiration date", "exp date",
				"exp", "expires", "expire", "valid thru", "valid through", "mm yy", "mm yyyy"},
			Context: cardContext(),
		},
		{
			ID:     "bank-account",
			Reason: "a bank account or routing number",
			Phrases: []string{"iban", "bank account number", "bank account no", "bank acct",
				"routing number", "routing no", "routing transit number", "aba number",
				"aba routing", "ach routing", "sort code", "bsb", "bank details"},
			Heads: []string{"bank account", "checking account", "savings account"},
		},
		{
			ID:      "bank-account-number",
			Reason:  "a bank account number",
			Phrases: []string{"account number", "account no", "account num", "acct number", "acct no", "acct num"},
			Context: []string{"bank", "banking", "checking", "savings", "ach", "iban", "routing",
				"wire", "deposit", "payout", "sort code", "bsb", "swift", "bic"},
		},
		{
			ID:     "ssh-key",
			Reason: "an SSH private key",
			Phrases: []string{"ssh key", "ssh private key", "ssh keypair", "ssh key pair", "ssh identity",
				"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "openssh private key"},
			Except: []string{"public ssh key", "ssh public key"},
		},
		{
			ID:     "private-key",
			Reason: "a private or signing key",
			Phrases: []string{"private key", "privkey", "priv key", "signing key", "encryption key",
				"decryption key", "key pair", "keypair", "pkcs 8", "pkcs 12", "keystore"},
		},
		{
			ID:     "api-key",
			Reason: "an API key",
			Phrases: []string{"api key", "api secret", "api token", "api access key", "access key",
				"secret key", "secret access key", "developer key", "app key", "application key",
				"consumer key", "subscription key", "license key", "product key", "master key",
				"x api key"},
			// "<vendor> key" ("OpenAI key") asks for an API key; the
			// exceptions are keys that name data, not credentials.
			Heads: []string{"key"},
			Except: []string{"public key", "public ssh key", "primary key", "foreign key", "sort key",
				"partition key", "range key", "hash key", "row key", "cache key", "object key",
				"s3 key", "map key", "lookup key", "dictionary key", "translation key", "message key",
				"i18n key", "idempotency key", "dedupe key", "dedup key", "deduplication key",
				"group key", "grouping key", "shard key", "routing key", "composite key",
				"unique key", "natural key", "record key", "entity key", "item key", "issue key",
				"project key", "jira key", "ticket key", "board key", "space key", "page key",
				"label key", "tag key", "metadata key", "setting key", "settings key",
				"config key", "configuration key", "env key", "variable key", "property key",
				"field key", "json key", "yaml key", "musical key", "song key", "music key",
				"shortcut key", "hot key", "keyboard key", "modifier key", "piano key"},
		},
		{
			ID:     "client-secret",
			Reason: "a client or shared secret",
			Phrases: []string{"client secret", "shared secret", "app secret", "application secret",
				"consumer secret", "webhook secret", "signing secret", "secret value", "secret token"},
			Heads:  []string{"secret"},
			Except: []string{"secret santa"},
		},
		{
			ID:     "session",
			Reason: "a session cookie or session identifier",
			Phrases: []string{"session id", "session identifier", "session cookie", "session key",
				"session secret", "session token", "auth cookie", "authentication cookie",
				"login cookie", "cookie value", "cookie header", "cookie string"},
			Heads: []string{"cookie"},
			Stems: []string{"sessid", "sessionid"},
		},
		{
			ID:     "access-token",
			Reason: "an access or authentication token",
			Phrases: []string{"access token", "refresh token", "bearer token", "auth token",
				"authentication token", "authorization token", "id token", "identity token",
				"oauth token", "session token", "security token", "personal access token",
				"jwt", "bearer", "authorization header", "auth header"},
			Heads: []string{"token", "pat", "jwt"},
			Except: []string{"design token", "erc20 token", "erc721 token", "erc 20 token",
				"crypto token", "nft token", "utility token", "governance token", "token symbol"},
		},
		{
			ID:      "credential",
			Reason:  "a credential",
			Phrases: []string{"credential", "login secret", "auth secret"},
		},
	}
	return rules
}
