package world

import (
	"strings"
	"testing"
)

func TestARecordedAddressHoldsNoDerivedPasswordAndReadsBackWithIt(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	secret, err := h.Secret()
	if err != nil {
		t.Fatal(err)
	}
	pw := DerivePassword(secret, "postgres", "acme_x")
	addr := map[string]string{"url": "postgres://acme_x:" + pw + "@127.0.0.1:5432/acme_x", "password": pw, "user": "acme_x"}
	sl := SliceRecord{Service: "db", Adapter: "postgres", Name: "acme_x"}
	sl.SetAddress(addr, pw)
	for k, v := range sl.Address {
		if strings.Contains(v, pw) {
			t.Errorf("stored %s holds the password: %s", k, v)
		}
	}
	got := h.SliceAddress(sl)
	for k, v := range addr {
		if got[k] != v {
			t.Errorf("%s reads back as %q, want %q", k, got[k], v)
		}
	}
	// A record an older binky wrote, with the password in it, reads as is.
	old := SliceRecord{Adapter: "postgres", Name: "acme_x", Address: addr}
	if h.SliceAddress(old)["url"] != addr["url"] {
		t.Error("an older record's address changed on read")
	}
}
