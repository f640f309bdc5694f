package world

// MachineClaims is "" on Windows: claims are symlinks, which need a
// privilege there, so homes see each other's ports only through the bind
// check.
func MachineClaims() string { return "" }
