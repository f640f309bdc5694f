// Package adapters carves isolated slices (a database, a key prefix, ...)
// out of shared servers: the Adapter interface and its optional powers,
// ownership marks (world and home), slice naming and derived passwords, and
// the adapter table (Kinds) that every other part of binky reads. It
// imports no driver: each adapter's package does, and adapters/builtin maps
// the table's names to them.
package adapters
