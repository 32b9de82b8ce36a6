package store

import "fmt"

// Args gathers the arguments of a statement the SQL backends build from a
// query (ApprovalQuery.SQL, AuditQuery.SQL, DeliveryQuery.SQL), each
// numbered after the backend's placeholder mark: "?" for SQLite, "$" for
// PostgreSQL.
type Args struct {
	Mark string
	List []any
}

// Add appends v and returns its placeholder: the arg the queries' SQL
// methods take.
func (a *Args) Add(v any) string {
	a.List = append(a.List, v)
	return fmt.Sprintf("%s%d", a.Mark, len(a.List))
}
