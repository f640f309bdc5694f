//go:build unix

package proxy

import (
	"errors"
	"strings"
	"syscall"
)

// connRefused reports whether err says nothing listens on the service's port.
func connRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(err.Error(), "connection refused")
}
