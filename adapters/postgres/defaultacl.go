package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Default privileges (ALTER DEFAULT PRIVILEGES, as a template's migrations
// may set them) belong to the role that set them, and REASSIGN OWNED leaves
// them where they are. Left in a copy they would name the template's role
// in every world: its grants would not follow the world's role to the
// tables the world creates, and the template's role could never be dropped
// while a world exists (2BP01). So each copy hands them over: the world's
// role gets the same defaults, and the template's role none.

// handOver returns the statements, for a copy of template that c is
// connected to, that give what template's role owns there, and its default
// privileges, to the role to: none when that role does not exist.
func handOver(ctx context.Context, c *pgx.Conn, template, to string) ([]string, error) {
	if _, exists, _, err := roleOwner(ctx, c, template); err != nil || !exists {
		return nil, err
	}
	moves, err := defaultPrivilegeMoves(ctx, c, template, to)
	if err != nil {
		return nil, err
	}
	return append([]string{"REASSIGN OWNED BY " + ident(template) + " TO " + ident(to)}, moves...), nil
}

// defaultPrivilegeMoves returns the statements, for the database c is
// connected to, that give the role to the default privileges the role from
// has there, and take them from it. A grant to from itself becomes a grant
// to to.
func defaultPrivilegeMoves(ctx context.Context, c *pgx.Conn, from, to string) ([]string, error) {
	// A global entry (no schema) replaces the built-in defaults, so only
	// its difference from them is restated; a schema's entry adds to them.
	rows, err := c.Query(ctx, `WITH fr AS (SELECT oid FROM pg_roles WHERE rolname = $1),
		d AS (SELECT defaclobjtype AS t, defaclnamespace AS ns, defaclacl AS acl
			FROM pg_default_acl WHERE defaclrole = (SELECT oid FROM fr)),
		stored AS (SELECT d.t, d.ns, a.grantee, a.privilege_type, a.is_grantable FROM d, aclexplode(d.acl) a),
		builtin AS (SELECT d.t, d.ns, a.grantee, a.privilege_type, a.is_grantable FROM d,
			aclexplode(acldefault(CASE d.t WHEN 'S' THEN 's'::"char" ELSE d.t END, (SELECT oid FROM fr))) a
			WHERE d.ns = 0),
		diff AS ((SELECT *, true AS isgrant FROM stored EXCEPT SELECT *, true FROM builtin)
			UNION ALL (SELECT *, false FROM builtin EXCEPT SELECT *, false FROM stored))
	SELECT diff.t::text, coalesce(n.nspname, ''), diff.grantee = (SELECT oid FROM fr), diff.grantee = 0, coalesce(r.rolname, ''),
		diff.privilege_type, diff.is_grantable, diff.isgrant
	FROM diff LEFT JOIN pg_namespace n ON n.oid = diff.ns LEFT JOIN pg_roles r ON r.oid = diff.grantee
	ORDER BY diff.isgrant, 1, 2, 5, 6`, from)
	if err != nil {
		return nil, fmt.Errorf("read the default privileges of %s: %w", from, err)
	}
	defer rows.Close()
	var give, take []string
	for rows.Next() {
		var kind, schema, grantee, priv string
		var toSelf, toPublic, grantable, grant bool
		if err := rows.Scan(&kind, &schema, &toSelf, &toPublic, &grantee, &priv, &grantable, &grant); err != nil {
			return nil, err
		}
		objects, ok := defaultACLObjects[kind]
		if !ok || !defaultACLPrivileges[priv] {
			// A kind a later PostgreSQL adds: left with the template's
			// role, as before there were moves, rather than failing
			// every clone of the template.
			continue
		}
		if !toSelf && !toPublic && grantee == "" {
			return nil, fmt.Errorf("default privilege %s of %s: its grantee is no role", priv, from)
		}
		in := ""
		if schema != "" {
			in = " IN SCHEMA " + ident(schema)
		}
		who := func(self string) string {
			switch {
			case toSelf:
				return ident(self)
			case toPublic:
				return "PUBLIC"
			}
			return ident(grantee)
		}
		stmt := func(role string, grant bool) string {
			if grant {
				opt := ""
				if grantable {
					opt = " WITH GRANT OPTION"
				}
				return "ALTER DEFAULT PRIVILEGES FOR ROLE " + ident(role) + in + " GRANT " + priv + " ON " + objects + " TO " + who(role) + opt
			}
			return "ALTER DEFAULT PRIVILEGES FOR ROLE " + ident(role) + in + " REVOKE " + priv + " ON " + objects + " FROM " + who(role)
		}
		give = append(give, stmt(to, grant))
		take = append(take, stmt(from, !grant))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the default privileges of %s: %w", from, err)
	}
	// The template's role undoes them in reverse: a privilege whose grant
	// option alone differs is a revoke then a grant for the world's role,
	// and for the template's role a revoke of that grant, then the plain
	// grant back.
	slices.Reverse(take)
	return append(give, take...), nil
}

// defaultACLObjects names pg_default_acl's object types in ALTER DEFAULT
// PRIVILEGES.
var defaultACLObjects = map[string]string{"r": "TABLES", "S": "SEQUENCES", "f": "FUNCTIONS", "T": "TYPES", "n": "SCHEMAS",
	"L": "LARGE OBJECTS"} // PostgreSQL 18+

// defaultACLPrivileges are the privilege names aclexplode reports; they go
// into SQL as keywords, so nothing else is let through.
var defaultACLPrivileges = map[string]bool{
	"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "TRUNCATE": true, "REFERENCES": true,
	"TRIGGER": true, "EXECUTE": true, "USAGE": true, "CREATE": true, "MAINTAIN": true,
}
