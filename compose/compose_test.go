package compose

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestMalformedComposeGivesLineAndColumn(t *testing.T) {
	_, err := Convert(context.Background(), filepath.Join("testdata", "malformed", "docker-compose.yml"))
	if err == nil || !strings.Contains(err.Error(), "docker-compose.yml:4:") {
		t.Fatalf("err = %v, want file:line:column", err)
	}
}
