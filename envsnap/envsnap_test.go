package envsnap

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// sealed ends body with the check Save writes, so that what a test or the
// fuzzer puts in it reaches the parser's body.
func sealed(body string) []byte {
	end := sha256.Sum256([]byte(body))
	return []byte(body + "end " + hex.EncodeToString(end[:]) + "\n")
}

func TestASnapshotFileOfAnyShapeIsReadWithoutPanicking(t *testing.T) {
	head := magic + "digest " + strings.Repeat("00", 32) + "\nports 1\n"
	for _, body := range []string{
		magic + "digest " + strings.Repeat("00", 40) + "\nports\n", // a digest too long
		head + "out dotenv 9223372036854775807\nA\n",               // a size that overflows
		head + "out dotenv -1\n\n",
		head + "out dotenv 5\nA\n",
	} {
		if _, _, _, ok := parse(sealed(body)); ok {
			t.Errorf("%q was read as a snapshot", body)
		}
	}
	if _, _, out, ok := parse(sealed(head + "out dotenv 2\nA\n\n")); !ok || string(out["dotenv"]) != "A\n" {
		t.Errorf("a well-formed snapshot read as %q, %v", out, ok)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(magic+"digest "+strings.Repeat("00", 32)+"\nports 1 2\nout dotenv 2\nA\n\n", false)
	f.Add("end \n", true)
	f.Fuzz(func(t *testing.T, b string, raw bool) {
		// must not panic, whatever the file holds, sealed or not
		if raw {
			parse([]byte(b))
		} else {
			parse(sealed(b))
		}
	})
}
