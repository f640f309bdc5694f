package s3

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"strings"
)

// Bucket is the bucket of a slice. S3 bucket names are 3 to 63 characters
// of lowercase letters, digits and hyphens, beginning and ending with a
// letter or digit, not shaped like an IP address, and free of the prefixes
// and suffixes AWS reserves. Slice names (adapters.SliceName) are [a-z0-9_]
// with no leading, trailing or doubled '_', so '_' → '-' alone maps them
// one to one; any other name, or one the rules would still refuse, is
// folded further and gets a hash of the whole slice name, so the result is
// deterministic and two slice names never share a bucket.
func Bucket(slice string) string {
	var b strings.Builder
	exact := true
	for _, r := range slice {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '_':
			b.WriteByte('-')
		default:
			exact = false
			b.WriteByte('-')
		}
	}
	name := b.String()
	for strings.Contains(name, "--") {
		name = strings.ReplaceAll(name, "--", "-")
		exact = false
	}
	if t := strings.Trim(name, "-"); t != name {
		name, exact = t, false
	}
	if reserved(name) {
		name, exact = "w-"+name, false
	}
	if exact && len(name) >= 3 && len(name) <= 63 && !reservedSuffix(name) {
		return name
	}
	sum := sha256.Sum256([]byte(slice))
	suffix := "-" + hex.EncodeToString(sum[:4])
	if len(name) > 63-len(suffix) {
		name = strings.TrimRight(name[:63-len(suffix)], "-")
	}
	if name == "" {
		name = "w"
	}
	return name + suffix
}

// reserved reports names S3 refuses by their start, or that read as an IP
// address.
func reserved(name string) bool {
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return net.ParseIP(name) != nil
}

// reservedSuffix reports the endings AWS keeps for access points and
// directory buckets.
func reservedSuffix(name string) bool {
	for _, s := range []string{"-s3alias", "--ol-s3", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// AccessKey is the access key of a slice's user: at most 20 characters (the
// limit MinIO and older S3 clients hold to), [a-z0-9-]; a name that had to
// be cut ends in a hash of the whole slice name.
func AccessKey(slice string) string {
	name := Bucket(slice)
	if len(name) <= 20 {
		return name
	}
	sum := sha256.Sum256([]byte(slice))
	suffix := "-" + hex.EncodeToString(sum[:4])
	return strings.TrimRight(name[:20-len(suffix)], "-") + suffix
}

// Policy is the name of the canned policy that lets a slice's user reach
// its bucket and nothing else.
func Policy(slice string) string { return "binky-" + Bucket(slice) }
