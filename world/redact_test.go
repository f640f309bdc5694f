package world

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/gitx/gittest"
	"github.com/git-binky/git-binky/logfile"
)

func TestRedactEnvHidesEveryCopyOfACredential(t *testing.T) {
	env := map[string]string{
		"DB_URL":        "postgres://acme_x:s3cretpw42@127.0.0.1:5432/acme_x",
		"DB_PASSWORD":   "s3cretpw42",
		"DB_DSN":        "acme_x:s3cretpw42@tcp(127.0.0.1:3306)/acme_x",
		"S3_SECRET_KEY": "abcdEFGH1234",
		"API_URL":       "http://api.x.acme.localhost:1355",
		"DB_USER":       "acme_x",
	}
	got := RedactEnv(env)
	for k, v := range got {
		if strings.Contains(v, "s3cretpw42") || strings.Contains(v, "abcdEFGH1234") {
			t.Errorf("%s still shows a credential: %s", k, v)
		}
	}
	if got["DB_URL"] != "postgres://acme_x:xxxxx@127.0.0.1:5432/acme_x" || got["DB_USER"] != "acme_x" || got["API_URL"] != env["API_URL"] {
		t.Errorf("redacted too much or too little: %v", got)
	}
	if env["DB_PASSWORD"] != "s3cretpw42" {
		t.Error("RedactEnv changed its argument")
	}
}

func TestCoordinatesRedactedHidesFieldsToo(t *testing.T) {
	c := Coordinates{
		Env:      map[string]string{"DB_URL": "postgres://u:pw123456@h/db"},
		Services: map[string]ServiceAddress{"db": {Fields: map[string]string{"password": "pw123456", "url": "postgres://u:pw123456@h/db"}}},
	}
	r := c.Redacted()
	if r.Services["db"].Fields["password"] != Hidden || strings.Contains(r.Env["DB_URL"], "pw123456") {
		t.Errorf("redacted = %+v", r)
	}
	if c.Services["db"].Fields["password"] != "pw123456" {
		t.Error("Redacted changed its receiver")
	}
}

// What an attack saw in env without reveal: a password the URL escapes
// otherwise than Go does, a password as a URL parameter, an API key.
func TestRedactEnvHidesEscapedPasswordsParametersAndKeys(t *testing.T) {
	env := map[string]string{
		"VEC_URL":      "postgres://u:pa%20ss%2Fword@h:5999/db?password=querysecret1&sslmode=disable",
		"VEC_PASSWORD": "pa ss/word",
		"VEC_API_KEY":  "ADMINAPIKEY-123456",
		"QDRANT_URL":   "http://127.0.0.1:6333/?api_key=ADMINAPIKEY-123456",
		"DB_PASS":      "hunter2hunter2",
		"OTHER_URL":    "redis://:pl%41in-pw-9@127.0.0.1:6379/0",
	}
	got := RedactEnv(env)
	for k, v := range got {
		for _, secret := range []string{"pa%20ss%2Fword", "pa ss/word", "querysecret1", "ADMINAPIKEY-123456", "hunter2hunter2", "pl%41in-pw-9", "plAin-pw-9"} {
			if strings.Contains(v, secret) {
				t.Errorf("%s still shows %q: %s", k, secret, v)
			}
		}
	}
	if !strings.Contains(got["VEC_URL"], "sslmode=disable") || !strings.HasPrefix(got["VEC_URL"], "postgres://u:xxxxx@h:5999/db") {
		t.Errorf("redacted too much: %s", got["VEC_URL"])
	}
}

// An adapter (an external one) gave a URL Go cannot parse and a driver DSN
// with no password variable beside them: both showed on the terminal and
// through MCP's env without reveal.
func TestRedactEnvHidesPasswordsInTextThatIsNotAURL(t *testing.T) {
	env := map[string]string{
		"DB_URL":  "postgres://app:Pa%zzS3cret@127.0.0.1:5432/app",
		"DB_DSN":  "app:DsnS3cret@tcp(127.0.0.1:3306)/app",
		"DB_DSN2": "root:DsnS3cret2@/app",
		"DB_HOST": "db:5432",
		"NOTE":    "mail me: a@b.example",
		"NOTE2":   "Note: mail ops@/dev/null",
	}
	got := RedactEnv(env)
	for k, v := range got {
		for _, secret := range []string{"Pa%zzS3cret", "DsnS3cret", "DsnS3cret2"} {
			if strings.Contains(v, secret) {
				t.Errorf("%s still shows %q: %s", k, secret, v)
			}
		}
	}
	if got["DB_DSN"] != "app:xxxxx@tcp(127.0.0.1:3306)/app" || got["DB_HOST"] != env["DB_HOST"] || got["NOTE"] != env["NOTE"] || got["NOTE2"] != env["NOTE2"] {
		t.Errorf("redacted too much or too little: %v", got)
	}
}

func TestSecretNamesAreCredentialsAndOnlyThose(t *testing.T) {
	for _, k := range []string{"DB_PASSWORD", "password", "S3_SECRET_KEY", "VEC_API_KEY", "api_key", "apikey", "GH_TOKEN", "TLS_PRIVATE_KEY", "DB_PASS", "db-passwd", "LDAP_BIND_PW", "MYSQL_PWD", "APP_SALT", "JWT_AUTH_KEY", "AWS_SECRET_ACCESS_KEY", "DB_CREDENTIAL"} {
		if !secretName(k) {
			t.Errorf("%s is a credential", k)
		}
	}
	for _, k := range []string{"DB_URL", "DB_USER", "S3_ACCESS_KEY", "CACHE_PREFIX", "PWD", "COMPASS", "SPW", "GOOGLE_APPLICATION_CREDENTIALS", "AWS_ACCESS_KEY_ID", "DB_PORT", "BYPASS_CACHE"} {
		if secretName(k) {
			t.Errorf("%s is not a credential", k)
		}
	}
}

func TestALogLineCutInsideASecretHidesItsFirstPart(t *testing.T) {
	pw := "04ce5e14d1e8ca86ea77b2f0c1d9e3aa"
	hide := Hider(map[string]string{"DB_PASSWORD": pw})
	line := strings.Repeat("A", 30) + pw[:20] + logfile.CutMark + "16396 bytes]"
	got := hide(line)
	if strings.Contains(got, pw[:5]) {
		t.Errorf("the cut secret's first part shows: %q", got)
	}
	if want := strings.Repeat("A", 30) + Hidden + logfile.CutMark + "16396 bytes]"; got != want {
		t.Errorf("hide = %q, want %q", got, want)
	}
	if got := hide("nothing " + logfile.CutMark + "9 bytes]"); got != "nothing "+logfile.CutMark+"9 bytes]" {
		t.Errorf("a cut line with no secret changed: %q", got)
	}
}

// MCP logs from an offset one byte into a password returned its other 31
// characters: a page that begins inside a line says so, and the hider
// hides a secret's last part there.
func TestAPageBeginningInsideASecretHidesItsLastPart(t *testing.T) {
	pw := "04ce5e14d1e8ca86ea77b2f0c1d9e3aa"
	path := filepath.Join(t.TempDir(), "api.log")
	if err := os.WriteFile(path, []byte("start\nPW="+pw+" ok\nnext\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	offset := int64(len("start\nPW=") + 1)
	lines, _, err := logfile.PageWithin(path, offset, 10, logfile.MaxTailBytes)
	if err != nil || len(lines) != 2 {
		t.Fatalf("page = %q, %v", lines, err)
	}
	hide := Hider(map[string]string{"DB_PASSWORD": pw})
	if got := hide(lines[0]); got != logfile.CutStartMark+Hidden+" ok" {
		t.Errorf("first line hidden = %q, want the cut mark, then %s ok", got, Hidden)
	}
	if got := hide("a line that begins " + pw[20:]); got != "a line that begins "+pw[20:] {
		t.Errorf("a line not cut at its start changed: %q", got)
	}
	whole, _, _ := logfile.PageWithin(path, int64(len("start\n")), 10, logfile.MaxTailBytes)
	if len(whole) == 0 || strings.HasPrefix(whole[0], logfile.CutStartMark) {
		t.Errorf("a page from a line's start is marked cut: %q", whole)
	}
}

// MCP logs and verify hid only the coordinates' passwords: a service
// echoing the STRIPE_SECRET_KEY of its env_file or the token its env
// table takes from the caller showed them without reveal.
func TestTheProcessHiderHidesWhatTheServicesEnvironmentHolds(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{
		"binky.toml": "[project]\nname = \"acme\"\n[services.api]\ncmd = \"./api\"\nenv_file = \".env.api\"\nenv = { MY_TOKEN = \"${env.MYTOK}\", PLAIN = \"visible-value\" }\n",
		".env.api":   "STRIPE_SECRET_KEY=sk_live_abcdef123456\n",
	})
	home := Home{Dir: filepath.Join(tmp, "home")}
	w, err := Open(home, repo, "")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := w.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hide := w.ProcessHider(rec, []string{"MYTOK=tok_supersecret_999", "HOME=/home/me"})
	got := hide("stripe=sk_live_abcdef123456 token=tok_supersecret_999 plain=visible-value home=/home/me")
	if want := "stripe=xxxxx token=xxxxx plain=visible-value home=/home/me"; got != want {
		t.Errorf("hidden = %q, want %q", got, want)
	}
}

// An S3 slice's access key is its bucket's name (and its user's): the
// field minio.access_key read as a credential, and MCP's env showed the
// bucket as xxxxx. Its secret key stays hidden.
func TestAnS3SlicesAccessKeyIsNotHiddenButItsSecretIs(t *testing.T) {
	c := Coordinates{
		Env: map[string]string{"MINIO_BUCKET": "acme-feat-x1", "MINIO_ACCESS_KEY": "acme-feat-x1", "MINIO_USER": "acme-feat-x1",
			"MINIO_SECRET_KEY": "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "MINIO_PASSWORD": "9f8e7d6c5b4a39281706f5e4d3c2b1a0"},
		Services: map[string]ServiceAddress{"minio": {Fields: map[string]string{"bucket": "acme-feat-x1", "access_key": "acme-feat-x1",
			"user": "acme-feat-x1", "secret_key": "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "password": "9f8e7d6c5b4a39281706f5e4d3c2b1a0"}}},
	}
	r := c.Redacted()
	if r.Env["MINIO_BUCKET"] != "acme-feat-x1" || r.Env["MINIO_USER"] != "acme-feat-x1" {
		t.Errorf("bucket %q, user %q: the access key's id was hidden", r.Env["MINIO_BUCKET"], r.Env["MINIO_USER"])
	}
	if r.Env["MINIO_SECRET_KEY"] != Hidden || r.Env["MINIO_PASSWORD"] != Hidden {
		t.Errorf("secret key %q, password %q: want them hidden", r.Env["MINIO_SECRET_KEY"], r.Env["MINIO_PASSWORD"])
	}
}
