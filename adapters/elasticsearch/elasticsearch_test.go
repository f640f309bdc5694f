package elasticsearch

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

var markA = adapters.Mark(adapters.Owner{World: "w-a", Home: "h1"})

func sliceA(admin string) adapters.Slice {
	return adapters.Slice{Name: "acme_a", World: "w-a", Home: "h1", AdminURL: admin, Password: "0123456789abcdef0123456789abcdef"}
}

// elastic answers as an Elasticsearch 8 with security on, whose marks say
// acme_a is world w-a's of home h1; more replies are added per test.
func elastic(more map[string]reply) map[string]reply {
	r := map[string]reply{
		"GET /":                          {200, `{"version":{"number":"8.13.0","build_flavor":"default"}}`},
		"GET /_security/_authenticate":   {200, `{"username":"elastic"}`},
		"GET /binky-marks/_doc/acme_a":   {200, `{"found":true,"_source":{"slice":"acme_a","world":"w-a","home":"h1"}}`},
		"GET /_security/user/acme_a":     {200, `{"acme_a":{"metadata":{"binky_mark":"` + markA + `"}}}`},
		"GET /_security/role/acme_a":     {200, `{"acme_a":{"metadata":{"binky_mark":"` + markA + `"}}}`},
		"GET /_cat/indices/acme_a-*":     {200, `[{"index":"acme_a-docs"},{"index":"acme_a-logs"}]`},
		"GET /_data_stream/acme_a-*":     {200, `{"data_streams":[{"name":"acme_a-events"}]}`},
		"HEAD /binky-marks":              {200, ``},
		"GET /_security/user/acme_a_b":   {404, `{}`},
		"GET /binky-marks/_doc/acme_a_b": {404, `{"found":false}`},
	}
	for k, v := range more {
		r[k] = v
	}
	return r
}

func TestTeardownDeletesOnlyTheWorldsIndicesByExactName(t *testing.T) {
	r := newRecorder(t, elastic(map[string]reply{
		// Even were the server to answer the pattern with names of other
		// worlds (acme_a_b's, acme_ab's), teardown checks each name itself.
		"GET /_cat/indices/acme_a-*": {200, `[{"index":"acme_a-docs"},{"index":"acme_a_b-logs"},{"index":"acme_ab-x"},{"index":"acme_a-logs"},{"index":"binky-marks"}]`},
	}))
	if err := New().Teardown(context.Background(), sliceA(r.url("elastic:adminpw"))); err != nil {
		t.Fatal(err)
	}
	want := []string{"DELETE /_data_stream/acme_a-events", "DELETE /acme_a-docs", "DELETE /acme_a-logs",
		"DELETE /_security/user/acme_a", "DELETE /_security/role/acme_a", "DELETE /binky-marks/_doc/acme_a"}
	if got := r.sent(http.MethodDelete); !reflect.DeepEqual(got, want) {
		t.Errorf("teardown deleted\n  %v\nwant exactly\n  %v", got, want)
	}
	// The listing asked for the slice's pattern, hidden and closed indices too.
	if q := r.find(http.MethodGet, "/_cat/indices/acme_a-*"); q == nil || !strings.Contains(q.Query, "expand_wildcards=all") {
		t.Errorf("index listing %+v", q)
	}
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("elastic:adminpw"))
	for _, q := range r.Reqs {
		if q.Key != wantAuth {
			t.Errorf("%s %s sent as %q, want the admin", q.Method, q.Path, q.Key)
		}
	}
}

// Slice names are [a-z0-9_]; the prefix adds '-', so no world's pattern
// covers another world's names, and only "binky" would cover binky-marks.
func TestNoPatternMatchesAnotherSlicesIndices(t *testing.T) {
	names := []string{"acme_a", "acme_a_b", "acme_ab", "acme", "acme_a_b_c", "binky_golden_acme_1a2b3c4d5e"}
	for _, x := range names {
		for _, y := range names {
			if x != y && strings.HasPrefix(Prefix(y)+"logs", Prefix(x)) {
				t.Errorf("pattern %s matches %s's index", Pattern(x), y)
			}
		}
		if strings.HasPrefix(MarksIndex, Prefix(x)) {
			t.Errorf("pattern %s matches binky's %s", Pattern(x), MarksIndex)
		}
	}
	if !strings.HasPrefix(MarksIndex, Prefix(reserved)) {
		t.Errorf("the reserved name %q no longer covers %s: update reserved", reserved, MarksIndex)
	}
	r := newRecorder(t, elastic(nil))
	sl := sliceA(r.url("elastic:pw"))
	sl.Name = reserved
	if err := New().Provision(context.Background(), sl); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("provision of slice %q: %v, want ErrTaken (its pattern covers %s)", reserved, err, MarksIndex)
	}
	if err := New().Teardown(context.Background(), sl); !errors.Is(err, adapters.ErrNotOurs) {
		t.Errorf("teardown of slice %q: %v, want ErrNotOurs", reserved, err)
	}
	if got := r.sent(""); len(got) != 0 {
		t.Errorf("the reserved name still sent %v", got)
	}
}

func TestProvisionMakesARoleLimitedToThePrefixAndAUserWithOnlyIt(t *testing.T) {
	r := newRecorder(t, elastic(map[string]reply{
		"GET /binky-marks/_doc/acme_a": {404, `{"found":false}`},
		"GET /_cat/indices/acme_a-*":   {200, `[]`},
		"GET /_data_stream/acme_a-*":   {404, `{}`},
		"GET /_security/user/acme_a":   {404, `{}`},
		"GET /_security/role/acme_a":   {404, `{}`},
	}))
	sl := sliceA(r.url("elastic:pw"))
	if err := New().Provision(context.Background(), sl); err != nil {
		t.Fatal(err)
	}
	want := []string{"PUT /binky-marks/_create/acme_a", "PUT /_security/role/acme_a", "PUT /_security/user/acme_a"}
	if got := r.sent(http.MethodPut); !reflect.DeepEqual(got, want) {
		t.Errorf("provision sent %v, want %v", got, want)
	}
	role := r.find(http.MethodPut, "/_security/role/acme_a").Body
	if wantRole := `{"cluster":[],"indices":[{"names":["acme_a-*"],"privileges":["all"]}],"metadata":{"binky_mark":"` + markA + `"}}`; role != wantRole {
		t.Errorf("role body\n  %s\nwant\n  %s", role, wantRole)
	}
	user := r.find(http.MethodPut, "/_security/user/acme_a").Body
	if wantUser := `{"metadata":{"binky_mark":"` + markA + `"},"password":"` + sl.Password + `","roles":["acme_a"]}`; user != wantUser {
		t.Errorf("user body\n  %s\nwant\n  %s", user, wantUser)
	}
	if m := r.find(http.MethodPut, "/binky-marks/_create/acme_a"); !strings.Contains(m.Query, "refresh=true") || !strings.Contains(m.Body, `"world":"w-a","home":"h1"`) {
		t.Errorf("mark %+v", m)
	}
}

func TestOpenSearchUsesTheSecurityPluginsAPI(t *testing.T) {
	desc := `{"acme_a":{"description":"` + markA + `"}}`
	r := newRecorder(t, elastic(map[string]reply{
		"GET /":                            {200, `{"version":{"distribution":"opensearch","number":"2.13.0"}}`},
		"GET /_plugins/_security/authinfo": {200, `{"user_name":"admin"}`},
		"GET /_plugins/_security/api/roles/acme_a":         {200, desc},
		"GET /_plugins/_security/api/internalusers/acme_a": {200, desc},
		"GET /_plugins/_security/api/rolesmapping/acme_a":  {200, desc},
	}))
	sl := sliceA(r.url("admin:pw"))
	if err := New().Provision(context.Background(), sl); err != nil {
		t.Fatal(err)
	}
	want := []string{"PUT /_plugins/_security/api/roles/acme_a", "PUT /_plugins/_security/api/internalusers/acme_a", "PUT /_plugins/_security/api/rolesmapping/acme_a"}
	if got := r.sent(http.MethodPut); !reflect.DeepEqual(got, want) {
		t.Errorf("provision sent %v, want %v", got, want)
	}
	role := r.find(http.MethodPut, "/_plugins/_security/api/roles/acme_a").Body
	if wantRole := `{"cluster_permissions":["cluster_composite_ops"],"description":"` + markA + `","index_permissions":[{"allowed_actions":["indices_all"],"index_patterns":["acme_a-*"]}]}`; role != wantRole {
		t.Errorf("role body\n  %s\nwant\n  %s", role, wantRole)
	}
	if m := r.find(http.MethodPut, "/_plugins/_security/api/rolesmapping/acme_a").Body; m != `{"description":"`+markA+`","users":["acme_a"]}` {
		t.Errorf("mapping body %s", m)
	}
	if err := New().Teardown(context.Background(), sl); err != nil {
		t.Fatal(err)
	}
	wantDel := []string{"DELETE /_data_stream/acme_a-events", "DELETE /acme_a-docs", "DELETE /acme_a-logs",
		"DELETE /_plugins/_security/api/rolesmapping/acme_a", "DELETE /_plugins/_security/api/internalusers/acme_a",
		"DELETE /_plugins/_security/api/roles/acme_a", "DELETE /binky-marks/_doc/acme_a"}
	if got := r.sent(http.MethodDelete); !reflect.DeepEqual(got, wantDel) {
		t.Errorf("teardown deleted\n  %v\nwant\n  %v", got, wantDel)
	}
}

func TestWhatBinkyDidNotMakeIsNeitherTakenNorDeleted(t *testing.T) {
	for name, tc := range map[string]struct {
		replies map[string]reply
		foreign string // the path that must never be deleted
	}{
		"an unmarked index under the prefix": {map[string]reply{
			"GET /binky-marks/_doc/acme_a": {404, `{"found":false}`},
		}, "/acme_a-"},
		"a role of the slice's name made by hand": {map[string]reply{
			"GET /_security/role/acme_a": {200, `{"acme_a":{"metadata":{}}}`},
		}, "/_security/role/acme_a"},
		"a user marked for another home": {map[string]reply{
			"GET /_security/user/acme_a": {200, `{"acme_a":{"metadata":{"binky_mark":"binky:world=w-a;home=h2"}}}`},
		}, "/_security/user/acme_a"},
	} {
		t.Run(name, func(t *testing.T) {
			replies := tc.replies
			r := newRecorder(t, elastic(replies))
			sl := sliceA(r.url("elastic:pw"))
			if err := New().Provision(context.Background(), sl); !errors.Is(err, adapters.ErrTaken) {
				t.Errorf("provision: %v, want ErrTaken", err)
			}
			if got := r.sent(http.MethodPut); len(got) != 0 {
				t.Errorf("provision sent %v", got)
			}
			err := New().Teardown(context.Background(), sl)
			if !errors.Is(err, adapters.ErrNotOurs) {
				t.Errorf("teardown: %v, want ErrNotOurs", err)
			}
			// What is the slice's (marked) goes; the foreign object and, while
			// it stands, the prefix's mark stay.
			for _, d := range r.sent(http.MethodDelete) {
				if strings.HasPrefix(d, "DELETE "+tc.foreign) || strings.Contains(d, "binky-marks") {
					t.Errorf("teardown deleted %s, which is not binky's", d)
				}
			}
		})
	}
}

func TestAnotherWorldsTeardownDeletesNothing(t *testing.T) {
	r := newRecorder(t, elastic(nil))
	for _, imposter := range []adapters.Slice{
		{Name: "acme_a", World: "w-b", Home: "h1", AdminURL: r.url("elastic:pw")},
		{Name: "acme_a", World: "w-a", Home: "h2", AdminURL: r.url("elastic:pw")},
	} {
		if err := New().Teardown(context.Background(), imposter); !errors.Is(err, adapters.ErrNotOurs) {
			t.Errorf("teardown as %s/%s: %v, want ErrNotOurs", imposter.World, imposter.Home, err)
		}
	}
	if got := r.sent(http.MethodDelete); len(got) != 0 {
		t.Errorf("sent %v", got)
	}
}

func TestWithoutSecurityTheWorldGetsThePrefixOnly(t *testing.T) {
	r := newRecorder(t, elastic(map[string]reply{
		"GET /_security/_authenticate": {500, `{"error":{"reason":"Security must be explicitly enabled when using a [basic] license."}}`},
		"GET /binky-marks/_doc/acme_a": {404, `{"found":false}`},
		"GET /_cat/indices/acme_a-*":   {200, `[]`},
		"GET /_data_stream/acme_a-*":   {404, `{}`},
	}))
	sl := sliceA(strings.Replace(r.URL, "http://", "elasticsearch://", 1))
	if err := New().Provision(context.Background(), sl); err != nil {
		t.Fatal(err)
	}
	if got := r.sent(http.MethodPut); !reflect.DeepEqual(got, []string{"PUT /binky-marks/_create/acme_a"}) {
		t.Errorf("provision without security sent %v, want only the mark", got)
	}
	addr, err := New().Resolve(context.Background(), sl)
	if err != nil {
		t.Fatal(err)
	}
	if addr["isolation"] != IsolationNone || addr["user"] != "" || addr["url"] != r.URL || addr["prefix"] != "acme_a-" {
		t.Errorf("address without security: %v", addr)
	}
}

func TestResolveGivesTheWorldsOwnUser(t *testing.T) {
	r := newRecorder(t, elastic(nil))
	sl := sliceA(r.url("elastic:adminpw"))
	addr, err := New().Resolve(context.Background(), sl)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(r.URL, "http://", "http://acme_a:"+sl.Password+"@", 1)
	if addr["url"] != want || addr["user"] != "acme_a" || addr["isolation"] != IsolationUser || strings.Contains(addr["url"], "adminpw") {
		t.Errorf("address %v, want url %s", addr, want)
	}
}

func TestBadAdminCredentialsAreAnError(t *testing.T) {
	r := newRecorder(t, elastic(map[string]reply{"GET /_security/_authenticate": {401, `{"error":"unauthorized"}`}}))
	err := New().Provision(context.Background(), sliceA(r.url("elastic:wrong")))
	if err == nil || !strings.Contains(err.Error(), "refused the admin_url's credentials") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("provision with bad admin credentials: %v", err)
	}
}

func TestAdminURLs(t *testing.T) {
	for _, tc := range []struct {
		in, base, user, pass string
		insecure             bool
		err                  string
	}{
		{"http://elastic:pw@127.0.0.1:9200", "http://127.0.0.1:9200", "elastic", "pw", false, ""},
		{"elasticsearch://127.0.0.1", "http://127.0.0.1:9200", "", "", false, ""},
		{"https://admin:p%40ss@os.local?insecure=true", "https://os.local:9200", "admin", "p@ss", true, ""},
		{"opensearch://admin:admin@[::1]:9201", "http://[::1]:9201", "admin", "admin", false, ""},
		{"ftp://x", "", "", "", false, "scheme"},
	} {
		base, user, pass, insecure, err := parseAdmin(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseAdmin(%q): %v, want an error about %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || base.String() != tc.base || user != tc.user || pass != tc.pass || insecure != tc.insecure {
			t.Errorf("parseAdmin(%q) = %s %s %s %v %v", tc.in, base.String(), user, pass, insecure, err)
		}
	}
}

// --- against a real cluster: these run only when BINKY_TEST_ELASTICSEARCH
// or BINKY_TEST_OPENSEARCH is set; they were never run here (neither can
// be installed on binky's build machine).

func realAdmins(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, v := range []string{"BINKY_TEST_ELASTICSEARCH", "BINKY_TEST_OPENSEARCH"} {
		if u := os.Getenv(v); u != "" {
			out[v] = u
		}
	}
	if len(out) == 0 {
		t.Skip("BINKY_TEST_ELASTICSEARCH and BINKY_TEST_OPENSEARCH are unset: point one at a cluster with security on (https://elastic:pw@127.0.0.1:9200?insecure=true) to run this test")
	}
	return out
}

func TestConformance(t *testing.T) {
	for v, admin := range realAdmins(t) {
		t.Run(v, func(t *testing.T) {
			s, err := New().connect(admin)
			if err != nil {
				t.Fatal(err)
			}
			adapterstest.RunServer(t, New(), adapterstest.Server{
				AdminURL: admin,
				Foreign: func(ctx context.Context, slice string) error {
					return s.do(ctx, http.MethodPut, "/"+Prefix(slice)+"precious", nil, nil)
				},
				Intact: func(ctx context.Context, slice string) (bool, error) {
					err := s.do(ctx, http.MethodHead, "/"+Prefix(slice)+"precious", nil, nil)
					s.do(ctx, http.MethodDelete, "/"+Prefix(slice)+"precious", nil, nil)
					return err == nil, nil
				},
			})
		})
	}
}

// as sends one request with a world's own url (its user in the userinfo).
func as(ctx context.Context, worldURL, method, path, body string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, worldURL+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func TestAWorldsUserReachesOnlyItsIndices(t *testing.T) {
	for v, admin := range realAdmins(t) {
		t.Run(v, func(t *testing.T) {
			ctx := context.Background()
			e := New()
			run := fmt.Sprint(time.Now().UnixNano() % 1e9)
			sa := adapters.Slice{Name: "esiso_a_" + run, World: "w-a", Home: "h", AdminURL: admin, Password: "aaaaaaaa11111111aaaaaaaa11111111"}
			sb := adapters.Slice{Name: "esiso_a_" + run + "_b", World: "w-b", Home: "h", AdminURL: admin, Password: "bbbbbbbb22222222bbbbbbbb22222222"}
			for _, sl := range []adapters.Slice{sa, sb} {
				if err := e.Provision(ctx, sl); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { e.Teardown(context.Background(), sl) })
			}
			ra, _ := e.Resolve(ctx, sa)
			rb, _ := e.Resolve(ctx, sb)
			if ra["isolation"] != IsolationUser {
				t.Skipf("%s has no security API on: isolation %q", v, ra["isolation"])
			}
			if st, err := as(ctx, rb["url"], http.MethodPut, "/"+Prefix(sb.Name)+"secret/_doc/1?refresh=true", `{"b":1}`); err != nil || st/100 != 2 {
				t.Fatalf("B cannot write its own index: %d %v", st, err)
			}
			if st, err := as(ctx, ra["url"], http.MethodPut, "/"+Prefix(sa.Name)+"mine/_doc/1?refresh=true", `{"a":1}`); err != nil || st/100 != 2 {
				t.Fatalf("A cannot write its own index: %d %v", st, err)
			}
			for what, req := range map[string][3]string{
				"read B's index":      {http.MethodGet, "/" + Prefix(sb.Name) + "secret/_doc/1", ""},
				"search B's index":    {http.MethodPost, "/" + Prefix(sb.Name) + "*/_search", `{}`},
				"delete B's index":    {http.MethodDelete, "/" + Prefix(sb.Name) + "secret", ""},
				"write outside":       {http.MethodPut, "/elsewhere/_doc/1", `{"x":1}`},
				"read binky's marks":  {http.MethodGet, "/" + MarksIndex + "/_search", ""},
				"write binky's marks": {http.MethodPut, "/" + MarksIndex + "/_doc/" + sb.Name, `{"world":"w-a"}`},
				"create a user (ES)":  {http.MethodPut, "/_security/user/evil", `{"password":"evilevil1","roles":["superuser"]}`},
				"create a user (OS)":  {http.MethodPut, "/_plugins/_security/api/internalusers/evil", `{"password":"evilevil1"}`},
				"change its own role": {http.MethodPut, "/_security/role/" + sa.Name, `{"indices":[{"names":["*"],"privileges":["all"]}]}`},
			} {
				if st, err := as(ctx, ra["url"], req[0], req[1], req[2]); err == nil && st/100 == 2 {
					t.Errorf("%s with A's user: HTTP %d, want refused", what, st)
				}
			}
		})
	}
}
