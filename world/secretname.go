package world

import "strings"

// One rule says which variable names hold a credential, for the three
// places that ask: check warns when one is written inline, init keeps its
// value out of the file, and env and logs hide it. It reads how a name
// ends, not what it contains: PASSWORD_MIN_LENGTH, TOKEN_TTL and
// TOKENIZER_MODEL are settings, and a MY_TOKEN_URL is an address (a
// password inside a URL is found by reading the URL).

// Endings that make a credential as the end of any word run together
// (DBPASSWORD, CLIENTSECRET, GH_TOKEN).
var credentialEndings = []string{"PASSWORD", "PASSWD", "SECRET", "TOKEN", "APIKEY", "CREDENTIAL"}

// Words that make a credential only as a whole last word: DB_PASS but not
// BYPASS or COMPASS, LDAP_BIND_PW, MYSQL_PWD (PWD alone is the shell's
// working folder), AUTH_SALT, APP_KEY.
var credentialWords = map[string]bool{"PASS": true, "PW": true, "PWD": true, "SALT": true, "PEPPER": true, "KEY": true}

// Words after a credential's word that keep it one (SECRET_KEY_BASE,
// ADMIN_PASSWORD_HASH, DB_PASSWORD_2).
var credentialTails = map[string]bool{"BASE": true, "HASH": true, "B64": true, "BASE64": true, "ENC": true, "ENCRYPTED": true, "RAW": true, "PLAIN": true, "PLAINTEXT": true, "VALUE": true}

// KEY is a credential's last word in API_KEY or APP_KEY, and a cache's or
// a table's in CACHE_KEY or SORT_KEY. These first words make it one beyond
// doubt, which hiding needs: a hidden value is taken out of every line of
// every log, so a CACHE_KEY of "v1" would cut every "v1" out of them.
var keyOwners = map[string]bool{"API": true, "PRIVATE": true, "SECRET": true, "AUTH": true, "ENCRYPTION": true, "SIGNING": true, "MASTER": true, "APP": true, "LICENSE": true, "HMAC": true, "JWT": true, "SESSION": true, "CRYPT": true}

// credentialName reports whether name says it holds a credential, and
// whether it says so beyond doubt (a name that only ends in an unowned KEY
// does not). A name ending in _FILE or _PATH holds where a credential is
// (POSTGRES_PASSWORD_FILE=/run/secrets/db), and a plural CREDENTIALS is
// Google's file (GOOGLE_APPLICATION_CREDENTIALS): neither is one.
func credentialName(name string) (secret, sure bool) {
	up := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	words := strings.Split(up, "_")
	last := len(words) - 1
	for last > 0 && (words[last] == "" || isNumber(words[last]) || credentialTails[words[last]]) {
		last--
	}
	if len(words) > 1 && (words[len(words)-1] == "FILE" || words[len(words)-1] == "PATH") {
		return false, false
	}
	w := words[last]
	for _, e := range credentialEndings {
		if strings.HasSuffix(w, e) {
			return true, true
		}
	}
	if !credentialWords[w] || w == "PWD" && last == 0 {
		return false, false
	}
	if w != "KEY" {
		return true, true
	}
	if last == 0 {
		return true, false
	}
	prev := words[last-1]
	if prev == "ACCESS" { // AWS_SECRET_ACCESS_KEY is one; S3_ACCESS_KEY is its id
		return last >= 2 && words[last-2] == "SECRET", last >= 2 && words[last-2] == "SECRET"
	}
	return true, keyOwners[prev] || strings.HasSuffix(prev, "API")
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// SecretKey reports whether an environment variable's name says it holds
// a credential: check warns when one is written inline, and init keeps its
// value out of the file.
func SecretKey(name string) bool {
	secret, _ := credentialName(name)
	return secret
}

// secretName reports a variable or field whose value env and logs hide:
// a credential by its name beyond doubt (see keyOwners).
func secretName(name string) bool {
	secret, sure := credentialName(name)
	return secret && sure
}
