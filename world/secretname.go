package world

import "strings"

// One rule says which variable names hold a credential, for the three
// places that ask: check warns when one is written inline, init keeps its
// value out of the file, and env and logs hide it. A name holds one when a
// credential's word is in it (DB_PASSWORD, GITHUB_TOKEN_V2,
// STRIPE_SECRET_KEY_TEST) and no word after it makes it a setting of the
// credential instead (PASSWORD_MIN_LENGTH, TOKEN_TTL, MY_TOKEN_URL).

// Endings of a word that make it a credential's (DBPASSWORD, CLIENTSECRET,
// GH_TOKEN); a longer word merely beginning with one is not (TOKENIZER,
// PASSWORDLESS).
var credentialEndings = []string{"PASSWORD", "PASSWD", "SECRET", "TOKEN", "APIKEY", "SECRETKEY", "PRIVATEKEY", "CREDENTIAL"}

// Words that are a credential's only whole: DB_PASS but not BYPASS or
// COMPASS, LDAP_BIND_PW, MYSQL_PWD (PWD alone is the shell's working
// folder), AUTH_SALT.
var credentialWords = map[string]bool{"PASS": true, "PW": true, "PWD": true, "SALT": true, "PEPPER": true}

// Words after a credential's word that make the name a setting about the
// credential, not the credential.
var settingWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`LENGTH LEN MIN MAX TTL EXPIRY EXPIRES EXPIRE EXPIRATION LIFETIME AGE TIMEOUT INTERVAL
		URL URI URLS ENDPOINT HOST HOSTNAME PORT PATH FILE DIR FOLDER LOCATION DAYS HOURS MINUTES SECONDS MS MODEL ROUNDS COST
		POLICY RESET ENABLED DISABLED ENABLE DISABLE REQUIRED REQUIRE HEADER PREFIX SUFFIX TYPE NAME ID COUNT SIZE ALGORITHM
		ALG FORMAT MODE STRENGTH COMPLEXITY HINT FIELD PARAM KIND METHOD SCOPE SCOPES AUDIENCE ISSUER LIMIT RETRIES ATTEMPTS
		VERSION HASHER HASHERS VALIDATORS CHARS CHARSET REGEX PATTERN LEEWAY ITERATIONS ALGO STRATEGY BACKEND PROVIDER
		STORE STORAGE CACHE COOKIE PARAMS QUERY ENGINE DRIVER CLASS MODULE PLUGIN SERVICE SERVER REALM DOMAIN RULES RULE`) {
		settingWords[w] = true
	}
	for _, w := range strings.Fields(`DEV DEVELOPMENT TEST TESTING PROD PRODUCTION LIVE STAGING STAGE LOCAL CI OLD NEW
		CURRENT PREVIOUS PREV NEXT PRIMARY SECONDARY BACKUP B64 BASE64 HEX PEM DER HASH HASHED ENC ENCRYPTED RAW BASE VALUE
		PLAIN PLAINTEXT ROOT ADMIN`) {
		qualifierWords[w] = true
	}
}

// Words after a credential's word that leave it one beyond doubt (a
// number, a version, DB_PASSWORD_DEV, SSH_PRIVATE_KEY_B64). Any other
// word there (TOKEN_STORE's) leaves the name warned of and masked, but
// not hidden: a hidden value is cut out of every log line.
var qualifierWords = map[string]bool{}

// qualifier reports a word that only qualifies a credential's.
func qualifier(w string) bool {
	return qualifierWords[w] || isNumber(w) || len(w) > 1 && w[0] == 'V' && isNumber(w[1:])
}

// KEY is a credential's last word in API_KEY or APP_KEY, and a cache's or
// a table's in CACHE_KEY or SORT_KEY. A name whose word before KEY ends in
// one of these is a credential beyond doubt, which hiding needs: a hidden
// value is taken out of every line of every log, so a CACHE_KEY of "v1"
// would cut every "v1" out of them.
var keyOwners = []string{"API", "PRIVATE", "SECRET", "AUTH", "ENCRYPTION", "SIGNING", "MASTER", "APP", "LICENSE", "HMAC", "JWT", "SESSION", "CRYPT", "CLIENT"}

// credentialName reports whether name says it holds a credential, and
// whether it says so beyond doubt (a name whose only credential's word is
// a last KEY no owner's word comes before does not). A name ending in
// _FILE or _PATH holds where a credential is (POSTGRES_PASSWORD_FILE), and
// a plural CREDENTIALS is Google's file (GOOGLE_APPLICATION_CREDENTIALS):
// neither is one.
func credentialName(name string) (secret, sure bool) {
	// A service's field (minio.access_key) is judged as its variable
	// (MINIO_ACCESS_KEY): read as one word, "MINIO.ACCESS", the access
	// key's id was taken for a credential, and the bucket and user of the
	// same value were hidden from MCP's env.
	words := strings.Split(strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name)), "_")
	// The last credential's word; every word after it must not make the
	// name a setting, and only qualifiers after it make it one beyond
	// doubt.
	qualified := true
	for i := len(words) - 1; i >= 0; i-- {
		w := words[i]
		if settingWords[w] {
			return false, false
		}
		if credentialWord(w) && !(w == "PWD" && len(words) == 1) {
			return true, qualified
		}
		if w == "KEY" {
			secret, sure := keyName(words[:i])
			if i == lastWord(words) || secret && sure {
				return secret, sure && qualified
			}
		}
		if w != "" && !qualifier(w) {
			qualified = false
		}
	}
	return false, false
}

func credentialWord(w string) bool {
	if credentialWords[w] {
		return true
	}
	for _, e := range credentialEndings {
		if strings.HasSuffix(w, e) {
			return true
		}
	}
	return false
}

// lastWord is the index of the name's last word that is not a number
// (DB_KEY_2's KEY).
func lastWord(words []string) int {
	i := len(words) - 1
	for i > 0 && (words[i] == "" || isNumber(words[i])) {
		i--
	}
	return i
}

// keyName judges a name that ends in KEY, given the words before it.
func keyName(before []string) (secret, sure bool) {
	if len(before) == 0 {
		return true, false
	}
	prev := before[len(before)-1]
	if prev == "ACCESS" { // AWS_SECRET_ACCESS_KEY is one; S3_ACCESS_KEY is its id
		s := len(before) >= 2 && strings.HasSuffix(before[len(before)-2], "SECRET")
		return s, s
	}
	for _, o := range keyOwners {
		if strings.HasSuffix(prev, o) { // OAUTH_KEY, CLIENTSECRET_KEY
			return true, true
		}
	}
	return true, false
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
