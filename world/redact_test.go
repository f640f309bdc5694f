package world

import (
	"strings"
	"testing"
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
