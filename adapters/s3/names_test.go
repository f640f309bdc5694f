package s3

import (
	"crypto/cipher"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/git-binky/git-binky/adapters"
)

func TestBucketNamesFollowS3Rules(t *testing.T) {
	names := []string{"acme_main", "a_b", "ab", "x", "", "acme_feat_x", strings.Repeat("long_", 20),
		"192.168.1.1", "xn--acme", "sthree-acme", "acme-s3alias", "Ünïcødé wörld", "a__b", "_a_", "a--b", "acme_x--ol-s3"}
	for _, wt := range []string{"main", strings.Repeat("very_long_worktree", 5), "it's", "a*b?[c]"} {
		names = append(names, adapters.SliceName("acme", wt, "world-"+wt, 0))
	}
	for _, n := range names {
		b := Bucket(n)
		if err := s3utils.CheckValidBucketNameStrict(b); err != nil || len(b) < 3 || len(b) > 63 || reserved(b) || reservedSuffix(b) {
			t.Errorf("Bucket(%q) = %q: not a valid bucket name (%v)", n, b, err)
		}
		if Bucket(n) != b {
			t.Errorf("Bucket(%q) is not deterministic", n)
		}
		if k := AccessKey(n); len(k) < 3 || len(k) > 20 {
			t.Errorf("AccessKey(%q) = %q: want 3 to 20 characters", n, k)
		}
	}
}

func TestSliceNamesMapToBucketsOneToOne(t *testing.T) {
	cases := map[string]string{"acme_main": "acme-main", "a_b_c": "a-b-c", "abc": "abc"}
	for in, want := range cases {
		if got := Bucket(in); got != want {
			t.Errorf("Bucket(%q) = %q, want %q", in, got, want)
		}
	}
	// Names that fold to one string keep apart by their hash.
	seen := map[string]string{}
	for _, n := range []string{"a-b", "a_b", "a b", "a__b", "A_B", "ab", strings.Repeat("x", 70), strings.Repeat("x", 71)} {
		b := Bucket(n)
		if prev, dup := seen[b]; dup {
			t.Errorf("%q and %q share bucket %q", prev, n, b)
		}
		seen[b] = n
	}
	keys := map[string]string{}
	for _, n := range []string{"acme_feature_one_long", "acme_feature_one_longer", "acme_feature_one_longest"} {
		k := AccessKey(n)
		if prev, dup := keys[k]; dup {
			t.Errorf("%q and %q share access key %q", prev, n, k)
		}
		keys[k] = n
	}
}

func TestEncryptedBodiesOpenWithTheSecret(t *testing.T) {
	for _, size := range []int{0, 40, fragmentSize, fragmentSize + 1, 3*fragmentSize + 7} {
		data := []byte(strings.Repeat("s", size))
		sealed, err := encryptData("admin-secret", data)
		if err != nil {
			t.Fatal(err)
		}
		if sealed[32] != algPBKDF2AESGCM {
			t.Fatalf("algorithm byte %#x", sealed[32])
		}
		aead, err := streamCipher("admin-secret", sealed[:32])
		if err != nil {
			t.Fatal(err)
		}
		got, err := openStream(aead, sealed[33:41], sealed[41:])
		if err != nil || string(got) != string(data) {
			t.Errorf("size %d: opened %d bytes, err %v", size, len(got), err)
		}
		wrong, _ := streamCipher("another-secret", sealed[:32])
		if _, err := openStream(wrong, sealed[33:41], sealed[41:]); err == nil {
			t.Errorf("size %d: opened with the wrong secret", size)
		}
	}
}

// openStream reverses sealStream, to check the format; the server is what
// proves it (the integration tests create users through it).
func openStream(aead cipher.AEAD, nonce, sealed []byte) ([]byte, error) {
	ad := append([]byte{0x00}, aead.Seal(nil, fragmentNonce(nonce, 0), nil, nil)...)
	var out []byte
	step := fragmentSize + aead.Overhead()
	for seq := uint32(1); ; seq++ {
		last := len(sealed) <= step
		frag := sealed
		if last {
			ad[0] = 0x80
		} else {
			frag, sealed = sealed[:step], sealed[step:]
		}
		var err error
		if out, err = aead.Open(out, fragmentNonce(nonce, seq), frag, ad); err != nil {
			return nil, err
		}
		if last {
			return out, nil
		}
	}
}
