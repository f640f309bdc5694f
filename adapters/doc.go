// Package adapters carves isolated slices (a database, a key prefix, ...)
// out of shared servers: the Adapter interface, the registry of built-in
// names and aliases, and discovery of external binky-adapter-<name>
// executables on PATH.
package adapters
