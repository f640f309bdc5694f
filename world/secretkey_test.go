package world

import (
	"strings"
	"testing"
)

func TestCheckWarnsOfEveryCredentialNameWrittenInline(t *testing.T) {
	src := "[services.api]\ncmd = \"./api\"\n[services.api.env]\nDB_PASS = \"a\"\nMYSQL_PWD = \"b\"\nAUTH_KEY = \"c\"\nGH_TOKEN = \"d\"\n" +
		"APP_SECRET = \"e\"\nAUTH_SALT = \"f\"\nPASSWORD_FILE = \"/run/secrets/pw\"\nPASSAGE = \"g\"\nREAD = \"${env.DB_PASS}\"\n"
	cfg, diags := ParseConfig("binky.toml", []byte(src))
	if cfg == nil || len(diags) > 0 {
		t.Fatal(diags)
	}
	warned := map[string]bool{}
	for _, d := range Check(cfg, nil) {
		warned[strings.Fields(d.Message)[0]] = true
	}
	for _, k := range []string{"DB_PASS", "MYSQL_PWD", "AUTH_KEY", "GH_TOKEN", "APP_SECRET", "AUTH_SALT"} {
		if !warned[k] {
			t.Errorf("no warning for %s written inline", k)
		}
	}
	for _, k := range []string{"PASSWORD_FILE", "PASSAGE", "READ"} {
		if warned[k] {
			t.Errorf("%s is no credential written inline, but check warns", k)
		}
	}
}

func TestACredentialIsSaidByHowItsNameEnds(t *testing.T) {
	for _, k := range []string{"SECRET_KEY_BASE", "ADMIN_PASSWORD_HASH", "DB_PASSWORD_2", "DBPASSWORD", "CLIENTSECRET", "APP_KEY", "STRIPE_API_KEY", "JWT_KEY", "LDAP_BIND_PW", "AUTH_PEPPER", "db-passwd",
		// A qualifier after the credential's word (review: init wrote these
		// inline once the rule read only the last word).
		"DB_PASSWORD_DEV", "STRIPE_SECRET_KEY_TEST", "GITHUB_TOKEN_V2", "SECRETKEY", "SSH_PRIVATEKEY", "ADMIN_PASSWORD_OLD", "OAUTH_KEY", "CLIENTSECRET_KEY"} {
		if !SecretKey(k) || !secretName(k) {
			t.Errorf("%s: check warns %v, env hides %v; both should", k, SecretKey(k), secretName(k))
		}
	}
	// Settings and addresses that only mention a credential.
	for _, k := range []string{"PASSWORD_MIN_LENGTH", "TOKEN_TTL", "TOKENIZER_MODEL", "MY_TOKEN_URL", "PASSWORD_RESET_URL", "SECRET_ROTATION_DAYS", "KEYCLOAK_URL", "PWD", "BYPASS", "GOOGLE_APPLICATION_CREDENTIALS", "DB_PASSWORD_FILE", "S3_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "PASSWORDLESS_LOGIN", "TOKEN_EXPIRY_SECONDS", "API_KEY_HEADER", "CACHE_KEY_PREFIX"} {
		if SecretKey(k) || secretName(k) {
			t.Errorf("%s: check warns %v, env hides %v; neither should", k, SecretKey(k), secretName(k))
		}
	}
	// A KEY of no credential's owner may be a cache's: check warns and init
	// keeps it out, but env does not cut its value out of every log line.
	for _, k := range []string{"CACHE_KEY", "SORT_KEY", "KEY"} {
		if !SecretKey(k) || secretName(k) {
			t.Errorf("%s: check warns %v (want true), env hides %v (want false)", k, SecretKey(k), secretName(k))
		}
	}
}

// A setting's value named like a credential (SMTP_PASSWORD_ENCRYPTED=true)
// must not cut every "true" out of the logs.
func TestAPlainWordIsNeverHidden(t *testing.T) {
	hide := Hider(map[string]string{"SMTP_PASSWORD_ENCRYPTED": "true", "DB_PASSWORD_REQUIRED_X": "none", "DB_PASSWORD": "hunter2x"})
	if got := hide(`{"ok": true, "auth": none, "pw": "hunter2x"}`); got != `{"ok": true, "auth": none, "pw": "xxxxx"}` {
		t.Errorf("hidden = %q", got)
	}
}

// Review of the rule: qualifiers after KEY (OPENAI_API_KEY_DEV,
// SSH_PRIVATE_KEY_B64) keep it a credential beyond doubt; a word that is
// not a qualifier (TOKEN_STORE) leaves it warned of but not hidden, and
// words that name a setting (PASSWORD_ITERATIONS) make it none.
func TestQualifiersKeepACredentialOthersDoNotHideIt(t *testing.T) {
	for _, k := range []string{"SSH_PRIVATE_KEY_B64", "APP_KEY_BASE64", "JWT_SIGNING_KEY_BASE64", "API_KEY_TEST", "OPENAI_API_KEY_DEV", "STRIPE_API_KEY_LIVE", "APP_KEY_OLD", "MASTER_KEY_PROD", "PRIVATE_KEY_PEM", "DB_PASSWORD_2", "GITHUB_TOKEN_V2", "DB_PASSWORD_DEV"} {
		if !SecretKey(k) || !secretName(k) {
			t.Errorf("%s: check warns %v, env hides %v; both should", k, SecretKey(k), secretName(k))
		}
	}
	for _, k := range []string{"PASSWORD_ITERATIONS", "PASSWORD_HASHING_ALGO", "TOKEN_STORE", "TOKEN_PROVIDER", "SECRET_BACKEND", "PASSWORD_STRATEGY", "TOKEN_CACHE", "CSRF_TOKEN_COOKIE"} {
		if secretName(k) {
			t.Errorf("%s is hidden: its value would be cut out of every log line", k)
		}
	}
	if !SecretKey("GH_TOKEN_PERSONAL") || secretName("GH_TOKEN_PERSONAL") {
		t.Errorf("GH_TOKEN_PERSONAL: warned %v (want true), hidden %v (want false)", SecretKey("GH_TOKEN_PERSONAL"), secretName("GH_TOKEN_PERSONAL"))
	}
}

// A name warned of but not beyond doubt hides a value that reads as a key
// (a personal token), not one that reads as a word (TOKEN_STORE=redis).
func TestANameNotBeyondDoubtHidesAValueThatReadsAsAKey(t *testing.T) {
	hide := Hider(map[string]string{"GH_TOKEN_PERSONAL": "ghp_4eC39HqLyjWDarjtT1zdp7dc", "TOKEN_STORE": "redis"})
	if got := hide("token ghp_4eC39HqLyjWDarjtT1zdp7dc in redis"); got != "token xxxxx in redis" {
		t.Errorf("hidden = %q", got)
	}
}
