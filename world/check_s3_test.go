package world

import (
	"strings"
	"testing"
)

func TestCheckSaysSharedS3KeysIsolateByConventionOnly(t *testing.T) {
	src := `[services.store]
adapter = "s3"
admin_url = "${env.S3_ADMIN_URL}"
options = { access_key = "${env.S3_KEY}", secret_key = "${env.S3_SECRET}" }
[services.api]
cmd = "./api"
env = { S3_BUCKET = "${store.bucket}", AWS_ACCESS_KEY_ID = "${store.access_key}", AWS_SECRET_ACCESS_KEY = "${store.secret_key}", AWS_REGION = "${store.region}" }
`
	cfg, diags := ParseConfig("binky.toml", []byte(src))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	var convention bool
	for _, d := range Check(cfg, func(string) Adapter { return Adapter{Known: true, Managed: true} }) {
		if strings.Contains(d.Message, "by convention only") && d.Line == 4 {
			convention = true
		}
		if strings.Contains(d.Message, "unknown token") {
			t.Errorf("an S3 field reads as unknown: %s", d)
		}
	}
	if !convention {
		t.Error("check does not say that shared keys isolate worlds by convention only")
	}
}
