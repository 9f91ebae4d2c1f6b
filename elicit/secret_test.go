package elicit

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"apiKey", []string{"api", "key"}},
		{"APIKey", []string{"api", "key"}},
		{"API_KEY", []string{"api", "key"}},
		{"api-key", []string{"api", "key"}},
		{"  Api   Key ", []string{"api", "key"}},
		{"oauth2Token", []string{"oauth", "2", "token"}},
		{"2FA code", []string{"2", "fa", "code"}},
		{"my2FACode", []string{"my", "2", "fa", "code"}},
		{"cvv2", []string{"cvv", "2"}},
		{"id_ed25519", []string{"id", "ed", "25519"}},
		{"user's password", []string{"users", "password"}},
		{"HTTPServer", []string{"http", "server"}},
		{"snake_case.dotted/slash", []string{"snake", "case", "dotted", "slash"}},
		{"Ünïcode Wörds", []string{"ünïcode", "wörds"}},
		{"bad\xffutf8", []string{"bad", "utf", "8"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := words(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSecretPolicyCheckField(t *testing.T) {
	type field struct{ name, title, desc string }
	tests := []struct {
		f    field
		rule string // "" means allowed
	}{
		// Passwords.
		{field{"password", "", ""}, "password"},
		{field{"newPassword", "", ""}, "password"},
		{field{"new_password", "", ""}, "password"},
		{field{"NEW-PASSWORD", "", ""}, "password"},
		{field{"newpassword", "", ""}, "password"},
		{field{"pwd", "", ""}, "password"},
		{field{"passwd", "", ""}, "password"},
		{field{"x", "Passphrase", ""}, "password"},
		{field{"x", "Device passcode", ""}, "password"},
		{field{"value", "", "Your account password"}, "password"},
		{field{"password2", "", ""}, "password"},
		{field{"confirmPassword", "", ""}, "password"},
		{field{"passwordConfirmation", "", ""}, "password"},
		{field{"passwordless", "", ""}, ""},
		{field{"minPasswordLength", "", ""}, ""},
		{field{"password_policy", "", ""}, ""},
		{field{"x", "Password hint", ""}, ""},
		{field{"passenger", "Passenger name", ""}, ""},
		{field{"compass", "Compass heading", ""}, ""},
		// PINs.
		{field{"pin", "", ""}, "pin"},
		{field{"cardPin", "", ""}, "pin"},
		{field{"x", "PIN", ""}, "pin"},
		{field{"pinCode", "", ""}, "pin"},
		{field{"pincode", "", ""}, "pin"},
		{field{"x", "", "Enter your 4-digit PIN"}, "pin"},
		{field{"pinpoint", "", ""}, ""},
		{field{"x", "Pinpoint location", ""}, ""},
		{field{"pinned", "Pinned message", ""}, ""},
		{field{"x", "Message", "Text to pin to the top of the channel"}, ""},
		{field{"opinion", "Your opinion", ""}, ""},
		{field{"shipping", "Shipping address", ""}, ""},
		{field{"spin", "", ""}, ""},
		// API keys.
		{field{"apiKey", "", ""}, "api-key"},
		{field{"api_key", "", ""}, "api-key"},
		{field{"APIKEY", "", ""}, "api-key"},
		{field{"myapikey", "", ""}, "api-key"},
		{field{"x", "OpenAI key", ""}, "api-key"},
		{field{"stripeSecretKey", "", ""}, "api-key"},
		{field{"x", "AWS secret access key", ""}, "api-key"},
		{field{"apiKeyName", "", ""}, ""},
		{field{"keyboardLayout", "Keyboard layout", ""}, ""},
		{field{"sortKey", "", ""}, ""},
		{field{"issueKey", "Jira issue key", ""}, ""},
		{field{"x", "Public key", ""}, ""},
		{field{"monkey", "", ""}, ""},
		{field{"keynote", "Keynote speaker", ""}, ""},
		{field{"accessKeyId", "", ""}, ""},
		// Tokens.
		{field{"accessToken", "", ""}, "access-token"},
		{field{"refresh_token", "", ""}, "access-token"},
		{field{"x", "Bearer token", ""}, "access-token"},
		{field{"authToken", "", ""}, "access-token"},
		{field{"githubToken", "", ""}, "access-token"},
		{field{"token", "", ""}, "access-token"},
		{field{"x", "GitHub token (classic)", ""}, "access-token"},
		{field{"x", "Personal access token", ""}, "access-token"},
		{field{"tokenValue", "", ""}, "access-token"},
		{field{"slack_bot_token_v2", "", ""}, "access-token"},
		{field{"jwt", "", ""}, "access-token"},
		{field{"tokenCount", "Token count", ""}, ""},
		{field{"maxTokens", "Max tokens", ""}, ""},
		{field{"x", "Token budget", "How many tokens the summary may use"}, ""},
		{field{"x", "Access token lifetime", ""}, ""},
		{field{"tokenizer", "Tokenizer model", ""}, ""},
		{field{"x", "Design token", ""}, ""},
		// Client secrets.
		{field{"clientSecret", "", ""}, "client-secret"},
		{field{"client_secret", "", ""}, "client-secret"},
		{field{"x", "Webhook secret", ""}, "client-secret"},
		{field{"secret", "", ""}, "client-secret"},
		{field{"x", "Secret name", ""}, ""},
		{field{"secretary", "Secretary", ""}, ""},
		// Private and SSH keys.
		{field{"privateKey", "", ""}, "private-key"},
		{field{"x", "", "-----BEGIN PRIVATE KEY-----"}, "private-key"},
		{field{"signingKey", "", ""}, "private-key"},
		{field{"sshKey", "", ""}, "ssh-key"},
		{field{"id_ed25519", "", ""}, "ssh-key"},
		{field{"x", "Public SSH key", ""}, ""},
		{field{"x", "Private key path", ""}, ""},
		// Sessions.
		{field{"sessionId", "", ""}, "session"},
		{field{"sessionid", "", ""}, "session"},
		{field{"PHPSESSID", "", ""}, "session"},
		{field{"x", "Session cookie", ""}, "session"},
		{field{"cookie", "", ""}, "session"},
		{field{"x", "Session length (minutes)", ""}, ""},
		{field{"sessionName", "", ""}, ""},
		{field{"x", "Accept cookies", ""}, ""},
		// Payment cards.
		{field{"cardNumber", "", ""}, "card-number"},
		{field{"ccNumber", "", ""}, "card-number"},
		{field{"x", "Credit card", ""}, "card-number"},
		{field{"x", "", "Your card number, without spaces"}, "card-number"},
		{field{"pan", "", "Primary account number on the card"}, "card-number"},
		{field{"pan", "PAN", "16 digits from the front of your credit card"}, "card-pan"},
		{field{"cvv", "", ""}, "card-security-code"},
		{field{"cvv2", "", ""}, "card-security-code"},
		{field{"x", "CVC", ""}, "card-security-code"},
		{field{"x", "Security code", "3 digits on the back"}, "card-security-code"},
		{field{"cardExpiry", "", ""}, "card-expiry"},
		{field{"exp", "Expiry (MM/YY)", "As printed on your card"}, "card-expiry"},
		{field{"expiry", "Subscription expiry", ""}, ""},
		{field{"expirationDate", "Passport expiration date", ""}, ""},
		{field{"pan", "Pan speed", "Camera pan speed in degrees per second"}, ""},
		{field{"x", "Card holder name", ""}, ""},
		{field{"x", "Card number last 4 digits", ""}, ""},
		{field{"x", "Trello card title", ""}, ""},
		// Bank accounts.
		{field{"iban", "", ""}, "bank-account"},
		{field{"x", "IBAN", ""}, "bank-account"},
		{field{"routingNumber", "", ""}, "bank-account"},
		{field{"x", "Bank account", ""}, "bank-account"},
		{field{"sortCode", "", ""}, "bank-account"},
		{field{"accountNumber", "", "Your bank account for payouts"}, "bank-account-number"},
		{field{"accountNumber", "Customer account number", "Printed on your electricity bill"}, ""},
		{field{"x", "Bank account holder name", ""}, ""},
		// One-time codes.
		{field{"otp", "", ""}, "one-time-code"},
		{field{"totpCode", "", ""}, "one-time-code"},
		{field{"x", "Verification code", ""}, "one-time-code"},
		{field{"x", "2FA code", ""}, "one-time-code"},
		{field{"mfa_code", "", ""}, "one-time-code"},
		{field{"x", "SMS code", ""}, "one-time-code"},
		{field{"code", "Code", "Enter the code we sent to your phone"}, "one-time-code"},
		{field{"x", "One-time password", ""}, "one-time-code"},
		{field{"authorizationCode", "", ""}, "one-time-code"},
		{field{"x", "2FA", ""}, "one-time-code"},
		{field{"zipCode", "ZIP code", ""}, ""},
		{field{"countryCode", "Country code", ""}, ""},
		{field{"promoCode", "Promo code", ""}, ""},
		{field{"x", "Preferred 2FA method", ""}, ""},
		{field{"hotpink", "Hot pink shade", ""}, ""},
		// Recovery codes and seed phrases.
		{field{"recoveryCode", "", ""}, "recovery-code"},
		{field{"x", "Backup codes", ""}, "recovery-code"},
		{field{"seedPhrase", "", ""}, "seed-phrase"},
		{field{"x", "Recovery phrase", ""}, "seed-phrase"},
		{field{"mnemonic", "", ""}, "seed-phrase"},
		{field{"x", "BIP39 words", ""}, "seed-phrase"},
		{field{"x", "Security question answer", ""}, "security-answer"},
		{field{"x", "", "Your login credentials"}, "credential"},
		// Ordinary fields.
		{field{"name", "Full name", "Your full name"}, ""},
		{field{"email", "Email address", "We use it for receipts"}, ""},
		{field{"username", "GitHub username", ""}, ""},
		{field{"description", "Description", "A short description"}, ""},
		{field{"age", "Age", ""}, ""},
		{field{"amount", "Amount", "Amount to transfer"}, ""},
		{field{"title", "Issue title", ""}, ""},
		{field{"authorName", "Author", ""}, ""},
		{field{"bypass", "Bypass cache", ""}, ""},
		{field{"spinnerStyle", "Spinner style", ""}, ""},
		{field{"happiness", "How happy are you?", ""}, ""},
		{field{"turkey", "Turkey or ham", ""}, ""},
		{field{"x", "Token symbol", "The ERC20 token symbol, e.g. USDC"}, ""},
	}
	p := DefaultSecretPolicy()
	for _, tt := range tests {
		err := p.CheckField(tt.f.name, tt.f.title, tt.f.desc)
		var se *SecretFieldError
		switch {
		case tt.rule == "" && err != nil:
			t.Errorf("CheckField(%q, %q, %q) = %v, want allowed", tt.f.name, tt.f.title, tt.f.desc, err)
		case tt.rule != "" && err == nil:
			t.Errorf("CheckField(%q, %q, %q) allowed, want rule %q", tt.f.name, tt.f.title, tt.f.desc, tt.rule)
		case tt.rule != "" && (!errors.As(err, &se) || se.Rule != tt.rule):
			t.Errorf("CheckField(%q, %q, %q) = %v, want rule %q", tt.f.name, tt.f.title, tt.f.desc, err, tt.rule)
		case tt.rule != "" && !errors.Is(err, ErrSecretField):
			t.Errorf("CheckField(%q, …) error does not match ErrSecretField", tt.f.name)
		}
	}
}

func TestSecretPolicyZeroIsDefault(t *testing.T) {
	var zero SecretPolicy
	if err := zero.CheckField("password", "", ""); !errors.Is(err, ErrSecretField) {
		t.Fatalf("zero policy allowed a password field: %v", err)
	}
	if got, want := len(zero.Rules()), len(DefaultRules()); got != want {
		t.Fatalf("zero policy has %d rules, want %d", got, want)
	}
}

func TestSecretPolicyWithWithout(t *testing.T) {
	badge := Rule{ID: "badge", Reason: "a badge code", Phrases: []string{"badge code"}}
	tests := []struct {
		name    string
		policy  SecretPolicy
		field   string
		wantErr bool
		invalid bool
	}{
		{"extended catches new term", DefaultSecretPolicy().With(badge), "badgeCode", true, false},
		{"default ignores new term", DefaultSecretPolicy(), "badgeCode", false, false},
		{"extended keeps defaults", DefaultSecretPolicy().With(badge), "password", true, false},
		{"zero value extends defaults", SecretPolicy{}.With(badge), "password", true, false},
		{"without removes a rule", DefaultSecretPolicy().Without("password"), "password", false, false},
		{"without keeps others", DefaultSecretPolicy().Without("password"), "apiKey", true, false},
		{"pattern rule", DefaultSecretPolicy().With(Rule{ID: "emp", Pattern: regexp.MustCompile(`\bemp \d+\b`)}), "emp42", true, false},
		{"stem rule", NewSecretPolicy(Rule{ID: "s", Stems: []string{"geheim"}}), "meinGeheimwort", true, false},
		{"head rule", NewSecretPolicy(Rule{ID: "h", Heads: []string{"badge"}}), "employeeBadge", true, false},
		{"context rule without context", NewSecretPolicy(Rule{ID: "c", Phrases: []string{"number"}, Context: []string{"badge"}}), "number", false, false},
		{"context rule with context", NewSecretPolicy(Rule{ID: "c", Phrases: []string{"number"}, Context: []string{"badge"}}), "badge_number", true, false},
		{"only given rules", NewSecretPolicy(badge), "password", false, false},
		{"unknown removal fails closed", DefaultSecretPolicy().Without("no-such-rule"), "name", true, true},
		{"empty ID fails closed", DefaultSecretPolicy().With(Rule{Phrases: []string{"x"}}), "name", true, true},
		{"no terms fails closed", DefaultSecretPolicy().With(Rule{ID: "empty"}), "name", true, true},
		{"duplicate ID fails closed", DefaultSecretPolicy().With(Rule{ID: "password", Phrases: []string{"x"}}), "name", true, true},
		{"bad stem fails closed", DefaultSecretPolicy().With(Rule{ID: "st", Stems: []string{"Two Words"}}), "name", true, true},
		{"wordless phrase fails closed", DefaultSecretPolicy().With(Rule{ID: "ph", Phrases: []string{"--"}}), "name", true, true},
		{"failure survives With", DefaultSecretPolicy().Without("nope").With(badge), "name", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.CheckField(tt.field, "", "")
			if (err != nil) != tt.wantErr {
				t.Fatalf("CheckField(%q) = %v, wantErr %v", tt.field, err, tt.wantErr)
			}
			if (tt.policy.Err() != nil) != tt.invalid {
				t.Fatalf("Err() = %v, want invalid %v", tt.policy.Err(), tt.invalid)
			}
			if tt.invalid && errors.Is(err, ErrSecretField) {
				t.Fatalf("invalid policy error %v should not look like a secret finding", err)
			}
		})
	}
}

func TestSecretPolicyImmutable(t *testing.T) {
	rules := []Rule{{ID: "r", Phrases: []string{"alpha"}}}
	p := NewSecretPolicy(rules...)
	rules[0].Phrases[0] = "beta"
	if p.CheckField("alpha", "", "") == nil {
		t.Fatal("mutating the caller's rule changed the policy")
	}
	got := p.Rules()
	got[0].Phrases[0] = "gamma"
	if p.CheckField("alpha", "", "") == nil {
		t.Fatal("mutating Rules() output changed the policy")
	}
	base := DefaultSecretPolicy()
	_ = base.Without("password")
	if base.CheckField("password", "", "") == nil {
		t.Fatal("Without modified its receiver")
	}
}

func TestSecretFieldErrorMessage(t *testing.T) {
	err := DefaultSecretPolicy().CheckField("userPassword", "", "")
	msg := err.Error()
	for _, want := range []string{`"userPassword"`, "password", "URL mode"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	long := strings.Repeat("é", 200) + "password"
	if msg := DefaultSecretPolicy().CheckField(long, "", "").Error(); len(msg) > 400 {
		t.Errorf("message for a long name is %d bytes", len(msg))
	}
}

func TestDefaultRulesCompile(t *testing.T) {
	p := DefaultSecretPolicy()
	if p.Err() != nil {
		t.Fatal(p.Err())
	}
	for _, r := range DefaultRules() {
		if r.Reason == "" {
			t.Errorf("rule %q has no reason", r.ID)
		}
	}
}
