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
