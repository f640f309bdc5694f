package daemon

import (
	"reflect"
	"testing"

	"github.com/git-binky/git-binky/world"
)

func TestPlainUpStartsTheDefaultGroupWhenThereIsOne(t *testing.T) {
	for _, tc := range []struct {
		name, src, group string
		want             []string
	}{
		{"no groups: all", "[services.a]\ncmd = \"a\"\n[services.b]\ncmd = \"b\"\n", "", []string{"a", "b"}},
		{"default group: its services", "[services.a]\ncmd = \"a\"\n[services.b]\ncmd = \"b\"\n[groups]\ndefault = [\"a\"]\ndebug = [\"b\"]\n", "", []string{"a"}},
		{"a named group still wins", "[services.a]\ncmd = \"a\"\n[services.b]\ncmd = \"b\"\n[groups]\ndefault = [\"a\"]\ndebug = [\"b\"]\n", "debug", []string{"b"}},
		{"an empty default: nothing", "[services.a]\ncmd = \"a\"\n[groups]\ndefault = []\ndebug = [\"a\"]\n", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, diags := world.ParseConfig("binky.toml", []byte(tc.src))
			if cfg == nil || len(diags) > 0 {
				t.Fatalf("config: %v", diags)
			}
			got, err := serviceNames(cfg, tc.group)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("serviceNames(%q) = %v, want %v", tc.group, got, tc.want)
			}
		})
	}
}
