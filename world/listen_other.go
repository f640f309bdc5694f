//go:build !linux

package world

// ListensOnEveryInterface cannot tell here (no /proc/net): false.
func ListensOnEveryInterface(port int) bool { return false }
