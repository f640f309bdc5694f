package adapters

import (
	"fmt"
	"strconv"
	"strings"
)

// OptionInt reads a whole number from a service's options: TOML gives an
// integer, and an interpolated value ("${env.X}") a string.
func OptionInt(v any) (int, error) {
	switch n := v.(type) {
	case int64:
		return int(n), nil
	case int:
		return n, nil
	case float64:
		if n == float64(int(n)) {
			return int(n), nil
		}
	case string:
		return strconv.Atoi(strings.TrimSpace(n))
	}
	return 0, fmt.Errorf("%v is not a whole number", v)
}
